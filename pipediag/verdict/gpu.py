"""The GPU's readings for the verdict: memory nearly full, GPM's text and facts, and the readings near a line."""

from __future__ import annotations

from typing import Any

from pipediag.analysis.gpu import Gpm
from pipediag.analysis.modes import ModeSummary
from pipediag.verdict import thresholds as T
from pipediag.verdict.edges import Edge
from pipediag.verdict.text import pct, pct_or_na


def gpu_edges(synthetic: ModeSummary, gpm: Gpm | None, gpu_util: float) -> list[Edge]:
    """The GPU rules' readings with their spread (batch means over the synthetic window): NVML's
    busy share against the host line, and (GPM) the SMs working while busy against the small-
    kernel line, then SM activity against DCGM's ineffective-use line where that one decides."""
    window = synthetic.gpu
    util_ci = window.util_pct_ci if window is not None else None
    edges = [Edge("host", "GPU busy share with free input", gpu_util, *(util_ci or (None, None)),
                  T.GPU_BUSY_FOR_COMPUTE_PCT, unit="%")]
    if gpm is None or gpm.sm_active_pct is None or gpu_util <= 0:
        return edges
    while_busy = min(100.0, 100.0 * gpm.sm_active_pct / gpu_util)
    low = high = None
    if gpm.sm_active_pct_ci is not None:
        util_lo, util_hi = util_ci if util_ci is not None else (gpu_util, gpu_util)
        low = 100.0 * gpm.sm_active_pct_ci[0] / max(util_hi, 1e-9)
        high = min(100.0, 100.0 * gpm.sm_active_pct_ci[1] / max(util_lo, 1e-9))
    edges.append(Edge("small_kernels", "SMs with work while the GPU was busy", while_busy, low, high,
                      T.SM_ACTIVE_WHILE_BUSY_LOW_PCT, unit="%"))
    if while_busy >= T.SM_ACTIVE_WHILE_BUSY_LOW_PCT:
        edges.append(Edge("gpu_underused", "GPM SM activity", gpm.sm_active_pct,
                          *(gpm.sm_active_pct_ci or (None, None)), T.SM_ACTIVE_INEFFECTIVE_PCT, unit="%"))
    return edges


def memory_full(synthetic: ModeSummary) -> tuple[str, str] | None:
    """GPU memory >= 95% full: judged on the step's own peak against what its framework may use
    when the framework tells both (medium confidence), else on NVML's whole-device reading (low:
    JAX and TensorFlow reserve memory up front, so NVML shows the reservation, not the use)."""
    total = synthetic.gpu_memory_total_bytes
    peak = synthetic.peak_memory
    if peak is not None and peak.scope != "sampled" and (peak.limit_bytes or total):
        cap = peak.limit_bytes or total
        if peak.bytes / cap >= T.GPU_MEMORY_FULL_FRAC:
            return (f"the step's peak memory {peak.bytes / 2**30:.1f} GiB is {pct(peak.bytes / cap)} of the "
                    f"{cap / 2**30:.1f} GiB it may use ({peak.source})", "medium")
        return None
    mem = synthetic.gpu_memory_used_max_bytes
    if mem is not None and total and mem / total >= T.GPU_MEMORY_FULL_FRAC:
        return (f"GPU memory {pct(mem / total)} full ({mem / 2**30:.1f} of {total / 2**30:.1f} GiB) in synthetic "
                "mode; frameworks may preallocate, so this is an upper bound on real use", "low")
    return None


def gpm_text(gpm: Gpm) -> str:
    parts = [f"SM activity {pct_or_na(gpm.sm_active_pct)}", f"SM occupancy {pct_or_na(gpm.sm_occupancy_pct)}",
             f"tensor cores {pct_or_na(gpm.tensor_active_pct)}", f"FP32 {pct_or_na(gpm.fp32_active_pct)}",
             f"FP16 {pct_or_na(gpm.fp16_active_pct)}", f"DRAM bandwidth {pct_or_na(gpm.dram_bw_pct)} of peak"]
    return f"GPM in synthetic mode ({gpm.samples} samples): " + ", ".join(parts)


def gpm_facts(gpm: Gpm, gpu_util: float) -> dict[str, Any]:
    while_busy = None
    if gpm.sm_active_pct is not None and gpu_util > 0:
        while_busy = min(100.0, 100.0 * gpm.sm_active_pct / gpu_util)
    return {
        "gpm_sm_active_pct": gpm.sm_active_pct,
        "sm_active_while_busy_pct": while_busy,
        "gpm_tensor_active_pct": gpm.tensor_active_pct,
        "gpm_math_active_pct": gpm.math_active_pct,
        "gpm_dram_bw_pct": gpm.dram_bw_pct,
    }
