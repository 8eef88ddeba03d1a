"""`sweep()`: the step at several batch sizes — throughput, peak memory, the OOM edge, the knee.

Each batch size is one short diagnosis in synthetic and pipeline modes (the builder is called
with `batch_size`): synthetic gives the step's own throughput at that size (free input), which
is what the knee is found on; pipeline says whether the input keeps up at that size. Sizes run
from small to large; once one runs out of memory, larger ones are skipped (memory grows with the
batch) unless `keep_going`. Library code: returns a `Sweep`, prints nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pipediag.analysis.sweep import Rate, find_knee, oom_edge
from pipediag.records.memory import MemoryLimit
from pipediag.errors import UsageError
from pipediag.records.run import StopRule
from pipediag.samples.sampler import DEFAULT_HZ
from pipediag.results.sweep import OK, SWEEP_MODES, SweepPoint, Sweep, OUT_OF_MEMORY, SKIPPED, INTERRUPTED, STALLED


def parse_batch_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"--batch-sizes {text!r} is not a list of integers", "write e.g. --batch-sizes 16,32,64,128")
    if len(sizes) < 2 or any(b <= 0 for b in sizes) or len(set(sizes)) != len(sizes):
        raise UsageError(f"--batch-sizes {text!r}: give at least two different positive sizes",
                         "write e.g. --batch-sizes 16,32,64,128")
    return tuple(sorted(sizes))


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
    if diagnosis.status == "stalled":
        status = STALLED
    elif diagnosis.status != "complete":
        status = INTERRUPTED
    elif any(m.stop_reason == "out_of_memory" for m in diagnosis.modes.values()):
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
    model: Any | None = None,
    step: Callable[[Any], Any] | None = None,
    builder_kwargs: dict[str, Any] | None = None,
    batched: bool = False,
    batch_format: str = "tf",
    stop_rule: StopRule | None = None,
    sample_hz: float = DEFAULT_HZ,
    memory_limit: MemoryLimit | None = None,
    keep_going: bool = False,
    nvml_lib: Any | None = None,
    label: str | None = None,
    step_label: str | None = None,
    progress: Any | None = None,
    clock_ns: Callable[[], int] = time.monotonic_ns,
    stall_timeout_s: float | None = None,
) -> Sweep:
    """Run `builder(batch_size=B)` feeding the step for each B in `batch_sizes`.

    `memory_limit` is only recorded here: it must be applied (backends.memory_limit) before the
    user's code starts a framework, which is the caller's job (the CLI does it first thing).
    `stall_timeout_s`: as in `diagnose`; a batch size whose run stalls ends the sweep there
    (status "stalled"), the sizes before it kept.
    """
    from pipediag.api import diagnose as api

    started = clock_ns()
    sizes = tuple(sorted(batch_sizes))
    label = label or getattr(builder, "__name__", type(builder).__name__)
    rule = stop_rule or StopRule()
    points: list[SweepPoint] = []
    notes: list[str] = []
    environment = step_info = None
    status = "complete"
    oom_at: int | None = None
    for i, b in enumerate(sizes):
        if oom_at is not None and not keep_going:
            points.append(_skipped(b, f"skipped: {oom_at} already ran out of memory, and memory grows with the batch"))
            continue
        if progress is not None:
            progress.phase(f"batch size {b} ({i + 1} of {len(sizes)})")
        d = api.diagnose(
            builder, model=model, step=step, builder_kwargs=builder_kwargs, batch_size=b, batched=batched,
            batch_format=batch_format,
            modes=SWEEP_MODES, stop_rule=rule, sample_hz=sample_hz, nvml_lib=nvml_lib, label=label,
            step_label=step_label, progress=progress, clock_ns=clock_ns, stall_timeout_s=stall_timeout_s,
        )
        if d.error is not None:  # the user's code raised: as before the partial diagnosis, the sweep ends with it
            raise d.error
        if d.element is not None and d.element.batch_size not in (None, b):
            raise UsageError(
                f"asked for batch size {b}, the dataset's batches hold {d.element.batch_size} examples",
                "a sweep needs a builder that takes batch_size (or returns an unbatched dataset)",
            )
        environment = environment or d.environment
        step_info = d.step or step_info
        point = _point(b, d)
        points.append(point)
        if point.status == OUT_OF_MEMORY and oom_at is None:
            oom_at = b
        if point.status == INTERRUPTED:
            status = "interrupted"
            notes.append(f"interrupted at batch size {b}: the sweep stops there")
            points.extend(_skipped(later, "not run: the sweep was interrupted") for later in sizes[i + 1:])
            break
        if point.status == STALLED:
            status = "stalled"
            notes.append(f"batch size {b}: {d.stall.text}; the sweep stops there")
            points.extend(_skipped(later, "not run: the sweep stalled") for later in sizes[i + 1:])
            break
    ran = [p for p in points if p.status == OK and p.examples_per_sec]
    knee = find_knee([Rate(p.batch_size, p.examples_per_sec, p.examples_per_sec_ci) for p in ran])
    peaks = {p.batch_size: p.peak_memory.bytes for p in ran if p.peak_memory is not None}
    edge = oom_edge([p.batch_size for p in ran], [p.batch_size for p in points if p.status == OUT_OF_MEMORY], peaks,
                    memory_limit.text if memory_limit else "")
    if memory_limit is not None and memory_limit.not_applied:
        notes.extend(f"the memory limit did not apply to {n}" for n in memory_limit.not_applied)
    return Sweep(
        status=status,
        target=label,
        step=step_info,
        environment=environment,
        points=tuple(points),
        knee=knee,
        oom_edge=edge,
        memory_limit=memory_limit,
        settings={
            "batch_sizes": list(sizes), "batch_format": batch_format, "max_seconds_per_mode": rule.max_seconds,
            "modes": list(SWEEP_MODES), "keep_going": keep_going,
        },
        notes=tuple(notes),
        elapsed_s=(clock_ns() - started) / 1e9,
    )
