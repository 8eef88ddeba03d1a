"""From the verdict and the tuned mode's result to a list of fixes, each saying what backs it.

A fix is *measured* when the tuned mode applied it and ran faster than the user's pipeline with
non-overlapping 95% intervals; the speedup shown is that measurement (shared by the changes
that were applied together). Changes that were applied but gained nothing are not recommended:
they are listed as tried. A fix that pipediag could not measure says so in `basis`, and is
offered only when a measurement points at it (the verdict, the CPU pattern, a size estimate).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pipediag.analysis.modes import ModeSummary, rate_ratio
from pipediag.fixes import catalog
from pipediag.modes.changes import Change
from pipediag.verdict.rules import GPU_LIMIT_MEMORY_BANDWIDTH, GPU_LIMIT_SMALL_KERNELS, Verdict
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
        title=catalog.title(kind, stage, details.get("framework")),
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
    framework: str | None = None,
) -> Recommendation:
    """`framework`: the step's (jax, torch, tensorflow), so fixes to the step are written for it."""
    fw = framework if framework in ("jax", "torch") else "tensorflow"
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
        still_waiting = tuned is not None and (tuned.input_wait_frac or 0) >= INPUT_WAIT_HIGH
        saturated = verdict.cpu_pattern is not None and verdict.cpu_pattern.kind == "saturated"
        if verdict.bottleneck == "input" and saturated and (still_waiting or not measured):
            fixes.append(
                _fix(
                    "tf_data_service", None,
                    "not measured: every core was busy while the step waited"
                    + (", and still input-bound after tuning" if still_waiting else ""),
                )
            )
    elif verdict.bottleneck == "memory":
        oom = "oom_mode" in verdict.facts
        what = "the step ran out of memory at this batch size" if oom else "memory is nearly full at this batch size"
        fixes.append(_fix("batch_size", None, f"{what}; halve it",
                          code="ds = ds.batch(BATCH_SIZE // 2)  # or keep it, with gradient accumulation below"))
        fixes.append(_fix("gradient_accumulation", None, "keeps the effective batch size (and the training dynamics) "
                          "while each step holds half the activations", framework=fw))
        if gpu_present:
            fixes.append(_fix("mixed_precision", None, "half-width activations need about half the memory", framework=fw))
        if fw == "jax" and gpu_present:
            fixes.append(_fix("allocator", None, _jax_allocator_basis(modes), framework=fw))
        if fw == "torch" and gpu_present:
            fixes.append(_fix("allocator", None, "not measured: fragmentation can fail an allocation that would fit",
                              framework=fw))
        if tf_gpu_without_memory_growth and fw == "tensorflow":
            fixes.append(_fix("memory_growth", None, "TensorFlow reserves all GPU memory by default, hiding real use"))
        if not measured:
            tried = tuple(applied)
    elif verdict.bottleneck == "host":
        small_kernels = verdict.facts.get("gpu_limit") == GPU_LIMIT_SMALL_KERNELS
        why = ("not measured: the GPU is busy but its kernels fill few SMs; larger batches make larger kernels"
               if small_kernels else "not measured: with free input the GPU is mostly idle; larger batches "
               "spread the per-step overhead")
        fixes.append(_fix("batch_size", None, why, code="ds = ds.batch(2 * BATCH_SIZE)"))
        fixes.append(_fix("xla", None, "not measured: fuses the step into fewer, larger kernel launches", framework=fw))
        tried = tuple(applied)
    elif verdict.bottleneck == "compute":
        if verdict.facts.get("gpu_limit") == GPU_LIMIT_MEMORY_BANDWIDTH:
            fixes.append(_fix("mixed_precision", None, "not measured: the step is memory-bandwidth-bound; 16-bit "
                              "values halve the bytes each step moves", framework=fw))
            fixes.append(_fix("xla", None, "not measured: fusing element-wise work keeps intermediates on chip "
                              "instead of a round trip through DRAM each", framework=fw))
        else:
            if gpu_present:
                fixes.append(_fix("mixed_precision", None, "not measured: the step is the limit; tensor cores run "
                                  "bfloat16 several times faster than float32", framework=fw))
            fixes.append(_fix("xla", None, "not measured: the step is the limit, not the input; input changes will "
                              "not help", framework=fw))
        tried = tuple(applied)
    else:
        tried = tuple(applied)
    return Recommendation(tuple(fixes), tried)


def _jax_allocator_basis(modes: dict[str, ModeSummary | None]) -> str:
    synthetic = modes.get("synthetic")
    peak = synthetic.peak_memory if synthetic else None
    total = synthetic.gpu_memory_total_bytes if synthetic else None
    if peak is not None and peak.limit_bytes and total:
        return (f"not measured: JAX may use {peak.limit_bytes / 2**30:.1f} of the GPU's {total / 2**30:.1f} GiB "
                f"({100 * peak.limit_bytes / total:.0f}%)")
    return "not measured: JAX reserves 75% of GPU memory unless told otherwise"
