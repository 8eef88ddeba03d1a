"""From the verdict and the tuned mode's result to a list of fixes, each saying what backs it.

A fix is *measured* when the tuned mode applied it and ran faster than the user's pipeline with
non-overlapping 95% intervals; the speedup shown is that measurement (shared by the changes
that were applied together). Changes that were applied but gained nothing are not recommended:
they are listed as tried. A fix that pipediag could not measure says so in `basis`, and is
offered only when a measurement points at it (the verdict, the CPU pattern, a size estimate).
tf.data service is offered only when the cores stay full after tuning while the step still waits,
with the `pipediag scale` command that measures it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipediag.analysis.modes import ModeSummary, input_side_cpu, rate_ratio
from pipediag.builder.stages import Stage
from pipediag.fixes import catalog
from pipediag.modes.changes import Change
from pipediag.verdict.rules import Verdict, classify_cpu
from pipediag.verdict.thresholds import INPUT_WAIT_HIGH

MIN_GAIN = 1.05  # a tuned gain below 5% is not worth a change, even when significant


@dataclass(frozen=True)
class Fix:
    kind: str
    stage: str | None
    title: str
    code: str
    measured_speedup: float | None  # tuned / pipeline throughput, when measured
    speedup_ci: tuple[float, float] | None
    basis: str  # what supports it: the measurement, or the reason it is offered unmeasured

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fix:
        ci = d.get("speedup_ci")
        return cls(**{**d, "speedup_ci": None if ci is None else tuple(ci)})


def _fix(kind: str, stage: str | None, basis: str, speedup=None, ci=None, **details) -> Fix:
    return Fix(
        kind=kind,
        stage=stage,
        title=catalog.title(kind, stage),
        code=catalog.code(kind, stage, **details),
        measured_speedup=speedup,
        speedup_ci=ci,
        basis=basis,
    )


@dataclass(frozen=True)
class Recommendation:
    fixes: tuple[Fix, ...]
    tried: tuple[Change, ...]  # applied in the tuned mode without a measurable gain


def recommend(
    verdict: Verdict,
    modes: dict[str, ModeSummary | None],
    changes: list[Change],
    *,
    gpu_present: bool,
    tf_gpu_without_memory_growth: bool = False,
    stages: Sequence[Stage] = (),
    scale_command: str | None = None,
) -> Recommendation:
    pipeline, tuned = modes.get("pipeline"), modes.get("tuned")
    applied = [c for c in changes if c.applied]
    gain = rate_ratio(tuned, pipeline)
    measured = gain is not None and gain.clearly_above_one and gain.value >= MIN_GAIN
    fixes: list[Fix] = []
    tried: tuple[Change, ...] = ()

    if verdict.bottleneck == "input" or measured:
        if measured:
            together = f" (measured together with {len(applied) - 1} other change(s))" if len(applied) > 1 else ""
            for c in applied:
                fixes.append(
                    _fix(
                        c.kind, c.stage,
                        f"measured: the tuned pipeline ran {gain.value:.2f}x the original{together}",
                        gain.value, (gain.low, gain.high), **c.details,
                    )
                )
        else:
            tried = tuple(applied)
        for c in changes:
            if c.kind == "cache" and not c.applied and c.reason and "snapshot" in c.reason:
                fixes.append(_fix("snapshot", c.stage, f"not measured: {c.reason}"))
        if verdict.bottleneck == "input":
            service = _service_fix(verdict, tuned, stages, scale_command)
            if service is not None:
                fixes.append(service)
    elif verdict.bottleneck == "memory":
        fixes.append(_fix("batch_size", None, "the step ran out of memory at this batch size; halve it, or "
                          "accumulate gradients over several smaller batches",
                          code="ds = ds.batch(BATCH_SIZE // 2)  # and/or accumulate gradients over 2 steps"))
        if gpu_present:
            fixes.append(_fix("mixed_precision", None, "half-width activations need about half the memory"))
        if tf_gpu_without_memory_growth:
            fixes.append(_fix("memory_growth", None, "TensorFlow reserves all GPU memory by default, hiding real use"))
        if not measured:
            tried = tuple(applied)
    elif verdict.bottleneck == "host":
        fixes.append(_fix("batch_size", None, "not measured: with free input the GPU is mostly idle; larger batches "
                          "spread the per-step overhead", code="ds = ds.batch(2 * BATCH_SIZE)"))
        fixes.append(_fix("xla", None, "not measured: fuses the step into fewer kernel launches"))
        tried = tuple(applied)
    elif verdict.bottleneck == "compute":
        if gpu_present:
            fixes.append(_fix("mixed_precision", None, "not measured: the step is the limit; tensor cores run "
                              "bfloat16 several times faster than float32"))
        fixes.append(_fix("xla", None, "not measured: the step is the limit, not the input; input changes will not help"))
        tried = tuple(applied)
    else:
        tried = tuple(applied)
    return Recommendation(tuple(fixes), tried)


def _service_fix(verdict: Verdict, tuned: ModeSummary | None, stages: Sequence[Stage],
                 scale_command: str | None) -> Fix | None:
    """tf.data service, only when the host's cores are full even after tuning and the step still
    waits: then no change on this host can help, and moving preprocessing off it is what is left.
    It stays unmeasured here (a service on this same saturated host could show its overhead,
    never its gain); the fix hands over the exact `pipediag scale` command that measures it."""
    saturated = verdict.cpu_pattern is not None and verdict.cpu_pattern.kind == "saturated"
    if not saturated or tuned is None or not tuned.measured:
        return None
    tuned_wait = tuned.input_wait_frac or 0.0
    if tuned_wait < INPUT_WAIT_HIGH:
        return None
    tuned_side = input_side_cpu(tuned, None)
    if tuned_side is None or classify_cpu(tuned_side).kind != "saturated":
        return None
    basis = (
        f"not measured: every core was busy while the step waited, and after tuning the step still waited "
        f"{100 * tuned_wait:.0f}% of the time with the cores still full ({tuned_side.cpu.busy_cores:.1f} of "
        f"{tuned_side.cpu.cores} busy); `pipediag scale` measures the service and how many workers it takes"
    )
    python = [s.label for s in stages if s.has_py_function]
    if python:
        basis += (f"; first rewrite {', '.join(f'`{p}`' for p in python)} with TensorFlow ops: it calls Python, "
                  "which service workers cannot run")
    return _fix("tf_data_service", None, basis, command=scale_command)
