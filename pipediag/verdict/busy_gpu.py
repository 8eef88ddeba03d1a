"""Rules 5-6 of the verdict with a busy GPU: what GPM says the step does while NVML counts the GPU busy
(small kernels, memory bandwidth, math, or the chip under-used)."""

from __future__ import annotations

from pipediag.analysis.gpu import Gpm
from pipediag.records.verdict import (
    GPU_LIMIT_MATH,
    GPU_LIMIT_MEMORY_BANDWIDTH,
    GPU_LIMIT_SMALL_KERNELS,
    Verdict,
    lower,
)
from pipediag.verdict import thresholds as T
from pipediag.verdict.text import pct_or_na


def busy_gpu_verdict(gpm: Gpm | None, gpu_util: float, confidence: str, evidence: list[str], facts: dict) -> Verdict:
    """NVML says the GPU is busy with free input. GPM, when there, says with what."""
    if gpm is None or gpm.sm_active_pct is None:
        return Verdict("compute", confidence, "compute-bound: the step itself is the limit", tuple(evidence), facts=facts)
    while_busy = facts["sm_active_while_busy_pct"]
    if while_busy is not None and while_busy < T.SM_ACTIVE_WHILE_BUSY_LOW_PCT:
        evidence.append(
            f"while a kernel ran, only {while_busy:.0f}% of the SMs had work on average (SM activity "
            f"{gpm.sm_active_pct:.0f}% / GPU busy {gpu_util:.0f}%): kernels too small to fill the GPU, launched one "
            "after another"
        )
        return Verdict(
            "host", confidence,
            "host-bound: the GPU is busy but barely working (small kernels, launch overhead)",
            tuple(evidence), facts={**facts, "gpu_limit": GPU_LIMIT_SMALL_KERNELS},
        )
    math = gpm.math_active_pct
    if gpm.dram_bw_pct is not None and gpm.dram_bw_pct >= T.DRAM_BW_HIGH_PCT and (math is None or math < T.MATH_ACTIVE_LOW_PCT):
        evidence.append(
            f"DRAM bandwidth at {gpm.dram_bw_pct:.0f}% of peak while the busiest arithmetic pipe ran "
            f"{pct_or_na(math)} of the time: the step waits on memory traffic, not on math"
        )
        return Verdict(
            "compute", confidence,
            "compute-bound, and the step is memory-bandwidth-bound: it moves more bytes than it computes on",
            tuple(evidence), facts={**facts, "gpu_limit": GPU_LIMIT_MEMORY_BANDWIDTH},
        )
    if math is not None and math >= T.MATH_ACTIVE_LOW_PCT:
        facts = {**facts, "gpu_limit": GPU_LIMIT_MATH}
    elif gpm.sm_active_pct < T.SM_ACTIVE_INEFFECTIVE_PCT:
        # Between the rules: busy enough for NVML, not small enough for the small-kernel rule, yet
        # the chip mostly idle with no pipe or DRAM busy. Nothing on the chip is the limit: the time
        # goes to gaps between small kernels, as under NVML's 50% line, where the same step is host
        # (rule 5). Calling it compute here made the verdict jump at that line from run to run (the
        # H200's small_kernels: busy 45% -> host, 53% -> compute). One level less sure.
        evidence.append(
            f"yet the SMs worked only {gpm.sm_active_pct:.0f}% of the time (under the {T.SM_ACTIVE_INEFFECTIVE_PCT:.0f}% "
            f"DCGM calls ineffective use) with no arithmetic pipe or DRAM busy: no part of the chip is the limit; "
            "the step's time goes to small kernels and the gaps between them (launch and dispatch overhead), "
            "as when the GPU is idle; confidence lowered"
        )
        return Verdict("host", lower(confidence),
                       "host-bound: the GPU is under-used — busy by NVML, but most SMs idle and no pipe or DRAM busy",
                       tuple(evidence), facts={**facts, "gpu_underused": True, "gpu_limit": GPU_LIMIT_SMALL_KERNELS})
    return Verdict("compute", confidence, "compute-bound: the step itself is the limit", tuple(evidence), facts=facts)
