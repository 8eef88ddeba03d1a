"""`sweep()`: the step at several batch sizes — throughput, peak memory, the OOM edge, the knee.

Each batch size is one short diagnosis in synthetic and pipeline modes (the builder is called
with `batch_size`): synthetic gives the step's own throughput at that size (free input), which
is what the knee is found on; pipeline says whether the input keeps up at that size. Sizes run
from small to large; once one runs out of memory, larger ones are skipped (memory grows with the
batch) unless `keep_going`. The Keras model's precision (its dtype policy) is read from the model
and recorded, so two sweeps show what mixed precision does to the OOM edge; the model is built by
the caller (the CLI builds it under --precision). Library code: returns a `Sweep`, prints nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pipediag.analysis.sweep import Rate, find_knee, oom_edge
from pipediag.errors import UsageError
from pipediag.records.kinds import (
    COMPLETE,
    INTERRUPTED,
    OK,
    OUT_OF_MEMORY,
    SKIPPED,
    STALLED,
    Status,
)
from pipediag.records.memory import MemoryLimit
from pipediag.records.options import RunOptions, run_options
from pipediag.records.run import StopRule
from pipediag.results.sweep import SWEEP_MODES, Sweep, SweepPoint


def _examples(rate: float | None, batch_size: int) -> float | None:
    return None if rate is None else rate * batch_size


def _examples_ci(mode, batch_size: int) -> tuple[float, float] | None:
    if mode is None or not mode.steps or mode.batches_per_sec_ci is None:
        return None
    low, high = mode.batches_per_sec_ci
    return low * batch_size, high * batch_size


def _point(batch_size: int, diagnosis) -> SweepPoint:
    synthetic = diagnosis.modes.get("synthetic")
    pipeline = diagnosis.modes.get("pipeline")
    status = OK
    if diagnosis.status == STALLED:
        status = STALLED
    elif diagnosis.status != COMPLETE:
        status = INTERRUPTED
    elif any(m.stop_reason == OUT_OF_MEMORY for m in diagnosis.modes.values()):
        status = OUT_OF_MEMORY
    error = next((m.error for m in diagnosis.modes.values() if m.error is not None), None)
    gpm = synthetic.gpu.gpm if synthetic is not None and synthetic.gpu is not None else None
    return SweepPoint(
        batch_size=batch_size,
        status=status,
        examples_per_sec=_examples(synthetic.batches_per_sec if synthetic and synthetic.steps else None, batch_size),
        examples_per_sec_ci=_examples_ci(synthetic, batch_size),
        pipeline_examples_per_sec=_examples(pipeline.batches_per_sec if pipeline else None, batch_size),
        pipeline_examples_per_sec_ci=_examples_ci(pipeline, batch_size),
        step_ms_median=synthetic.step_ms_median if synthetic else None,
        input_wait_frac=pipeline.input_wait_frac if pipeline else None,
        gpu_util_pct=synthetic.gpu_util_pct if synthetic else None,
        gpm_sm_active_pct=None if gpm is None else gpm.sm_active_pct,
        peak_memory=synthetic.peak_memory if synthetic else None,
        peak_memory_reason=synthetic.peak_memory_reason if synthetic else None,
        bottleneck=None if diagnosis.verdict is None else diagnosis.verdict.bottleneck,
        error=error,
    )


def _skipped(batch_size: int, note: str) -> SweepPoint:
    return SweepPoint(batch_size, SKIPPED, None, None, None, None, None, None, None, None, None, None, None, note=note)


def sweep(
    builder: Callable[..., Any],
    batch_sizes: Sequence[int],
    *,
    options: RunOptions | None = None,
    stop_rule: StopRule | None = None,
    memory_limit: MemoryLimit | None = None,
    keep_going: bool = False,
    precision: str | None = None,
    **run_options_given: Any,
) -> Sweep:
    """Run `builder(batch_size=B)` feeding the step for each B in `batch_sizes`.

    options: the RunOptions every entry point shares, or the same as keyword arguments (as for
    `diagnose`; not batch_size: the sweep sets it). `memory_limit` is only recorded here: it must
    be applied (backends.memory_limit) before the user's code starts a framework, which is the
    caller's job (the CLI does it first thing). `stall_timeout_s`: as in `diagnose`; a batch size
    whose run stalls ends the sweep there (status "stalled"), the sizes before it kept.
    `precision`: the Keras dtype policy the model was built under (steps.precision: build it inside
    `with policy("mixed_float16"):`), checked against the model; None: read from the model.
    Asking for one with a step function or no model is a usage error.
    """
    from pipediag.api.options import stop_rule_for
    from pipediag.steps.precision import recorded

    opts = run_options(options, "sweep", unsupported=("batch_size",), **run_options_given)
    model_precision, precision_reason = recorded(precision, opts.model, opts.step)
    started = opts.clock_ns()
    sizes = tuple(sorted(batch_sizes))
    opts = replace(opts, label=opts.label_for(builder))
    rule = stop_rule_for(opts, stop_rule)
    run = _SizeByRun(builder, opts, rule, keep_going)
    for i, b in enumerate(sizes):
        if not run.size(b, i, sizes):
            break
    ran = [p for p in run.points if p.status == OK and p.examples_per_sec]
    knee = find_knee([Rate(p.batch_size, p.examples_per_sec, p.examples_per_sec_ci) for p in ran])
    peaks = {p.batch_size: p.peak_memory.bytes for p in ran if p.peak_memory is not None}
    edge = oom_edge([p.batch_size for p in ran], [p.batch_size for p in run.points if p.status == OUT_OF_MEMORY],
                    peaks, memory_limit.text if memory_limit else "")
    if memory_limit is not None and memory_limit.not_applied:
        run.notes.extend(f"the memory limit did not apply to {n}" for n in memory_limit.not_applied)
    return Sweep(
        status=run.status,
        target=opts.label,
        step=run.step_info,
        environment=run.environment,
        points=tuple(run.points),
        knee=knee,
        oom_edge=edge,
        memory_limit=memory_limit,
        settings={
            "batch_sizes": list(sizes), "batch_format": opts.batch_format, "max_seconds_per_mode": rule.max_seconds,
            "modes": list(SWEEP_MODES), "keep_going": keep_going,
        },
        notes=tuple(run.notes),
        elapsed_s=(opts.clock_ns() - started) / 1e9,
        precision=model_precision,
        precision_reason=precision_reason,
    )


class _SizeByRun:
    """The sweep's diagnoses, one batch size at a time, and where they stopped it."""

    def __init__(self, builder, options: RunOptions, rule: StopRule, keep_going: bool):
        self.builder, self.options, self.rule, self.keep_going = builder, options, rule, keep_going
        self.points: list[SweepPoint] = []
        self.notes: list[str] = []
        self.environment = self.step_info = None
        self.status: Status = COMPLETE
        self.oom_at: int | None = None

    def size(self, b: int, i: int, sizes: tuple[int, ...]) -> bool:
        """Diagnose batch size `b` (the i-th of `sizes`); False when the sweep stops there."""
        from pipediag.api import diagnose as api

        if self.oom_at is not None and not self.keep_going:
            self.points.append(_skipped(b, f"skipped: {self.oom_at} already ran out of memory, and memory grows "
                                           "with the batch"))
            return True
        if self.options.progress is not None:
            self.options.progress.phase(f"batch size {b} ({i + 1} of {len(sizes)})")
        d = api.diagnose(self.builder, options=replace(self.options, batch_size=b), modes=SWEEP_MODES,
                         stop_rule=self.rule)
        if d.error is not None:  # the user's code raised: as before the partial diagnosis, the sweep ends with it
            raise d.error
        if d.element is not None and d.element.batch_size not in (None, b):
            raise UsageError(
                f"asked for batch size {b}, the dataset's batches hold {d.element.batch_size} examples",
                "a sweep needs a builder that takes batch_size (or returns an unbatched dataset)",
            )
        self.environment = self.environment or d.environment
        self.step_info = d.step or self.step_info
        point = _point(b, d)
        self.points.append(point)
        if point.status == OUT_OF_MEMORY and self.oom_at is None:
            self.oom_at = b
        if point.status == INTERRUPTED:
            self.status = INTERRUPTED
            self.notes.append(f"interrupted at batch size {b}: the sweep stops there")
            self.points.extend(_skipped(later, "not run: the sweep was interrupted") for later in sizes[i + 1:])
            return False
        if point.status == STALLED:
            self.status = STALLED
            self.notes.append(f"batch size {b}: {d.stall.text}; the sweep stops there")
            self.points.extend(_skipped(later, "not run: the sweep stalled") for later in sizes[i + 1:])
            return False
        return True
