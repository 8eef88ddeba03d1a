"""The verdict from the pipeline mode alone: what `pipediag.keras.InputMonitor` sees in a real `fit`.

The same vocabulary as `rules.decide`, but with less to go on: there is no synthetic run (the
step with free input) and no input-only run (the pipeline alone), so the step's free rate and the
pipeline's own ceiling are unknown. What is measured directly is the share of time training
waited for the next batch, which CPUs were busy meanwhile, and the GPU. Hence:

1. memory (medium) — available host memory fell below 5% (the same threshold as `decide`).
2. inconclusive — fewer than MIN_STEPS timed steps, or no input-wait measurement.
3. input — waited >= 20% (medium) or >= 5% (low) of the time: the TensorFlow profiler's thresholds;
   low when the median wait is under SHORT_WAIT_MS (about the cost of taking a ready batch).
4. memory (low) — GPU memory >= 95% full.
5. host (medium) — the GPU was busy < 50% although training hardly waited for input.
6. compute — otherwise; without GPU readings host and compute cannot be told apart (low).

Confidence never exceeds medium: the CPU contention that `decide` detects by comparing with the
synthetic run (preprocessing slowing the step down without a visible wait) is invisible here, and
so is how much faster the step would run with free input. Every verdict says so in its evidence.
"""

from __future__ import annotations

from pipediag.analysis.modes import ModeSummary, input_side_cpu
from pipediag.records.verdict import Verdict, lower
from pipediag.verdict import thresholds as T
from pipediag.verdict.rules import classify_cpu
from pipediag.verdict.text import pct

# Below this median wait, the wait is of the same order as taking a ready batch at all: an eager
# `next(iterator)` dispatches an op and crosses from Python to TensorFlow's runtime, which costs
# tenths of a millisecond (0.25 ms on average for a cached, prefetched pipeline on the 2-core
# development machine). Such a wait says more about a very short step than about the pipeline.
SHORT_WAIT_MS = 1.0

CAVEAT = (
    "seen from inside your fit only (the pipeline mode): without a run on free input or of the pipeline alone, "
    "pipediag cannot tell how fast the step or the pipeline could go, nor see preprocessing slowing the step "
    "down; `pipediag diagnose` on your dataset builder measures that, with fixes"
)


def decide_pipeline_only(m: ModeSummary | None, unmeasured_wait_reason: str | None = None) -> Verdict:
    """`m`: the summary of the training steps. `unmeasured_wait_reason`: why the input wait could
    not be measured (then m is None or its wait is not used)."""
    if unmeasured_wait_reason is not None or m is None:
        reason = unmeasured_wait_reason or "no training step was measured"
        return Verdict("inconclusive", "low", "the input wait could not be measured in this fit", (reason, CAVEAT),
                       reason=reason)
    if m.host_available_min_bytes is not None and m.host_total_bytes:
        frac = m.host_available_min_bytes / m.host_total_bytes
        if frac < T.HOST_MEMORY_LOW_FRAC:
            return Verdict(
                "memory", "medium", "host memory nearly exhausted during training",
                (f"available host memory fell to {m.host_available_min_bytes / 2**30:.2f} GiB "
                 f"({pct(frac)} of {m.host_total_bytes / 2**30:.1f} GiB)", CAVEAT),
                facts={"host_available_frac": frac},
            )
    if m.steps < T.MIN_STEPS or m.input_wait_frac is None:
        return Verdict(
            "inconclusive", "low", "not enough training steps were measured to decide",
            (f"{m.steps} steps were timed after warm-up; at least {T.MIN_STEPS} are needed", CAVEAT),
            reason="too few steps (train longer, or lower warmup_steps)",
        )

    wait = m.input_wait_frac
    noisy = not m.batches_per_sec_ci or (
        (m.batches_per_sec_ci[1] - m.batches_per_sec_ci[0]) / 2 / m.batches_per_sec > T.WIDE_CI_REL
    )
    facts = {"input_wait_frac": wait, "batches_per_sec": m.batches_per_sec}
    evidence = [
        f"training waited for the next batch {pct(wait)} of the time ({m.steps} steps, "
        f"median wait {m.wait_ms_median:.2f} ms, median rest of the step {m.compute_ms_median:.2f} ms)",
        f"training ran at {m.batches_per_sec:.1f} batches/s",
    ]
    side = input_side_cpu(m, None)
    pattern = classify_cpu(side) if side else None

    if wait >= T.INPUT_WAIT_MODERATE:
        high = wait >= T.INPUT_WAIT_HIGH
        confidence = "medium" if high else "low"
        if noisy:
            confidence = lower(confidence)
        if m.wait_ms_median is not None and m.wait_ms_median < SHORT_WAIT_MS:
            confidence = "low"
            evidence.append(f"each wait is short ({m.wait_ms_median:.2f} ms median): part of it is the cost of taking "
                            "a ready batch at all, which a step this short makes visible")
        if pattern:
            evidence.append(pattern.text)
        evidence.append(f"removing the wait would make training up to {1 / (1 - wait):.2f}x faster"
                        if wait < 1 else "training did nothing but wait")
        evidence.append(CAVEAT)
        degree = "highly" if high else "moderately"
        return Verdict("input", confidence, f"{degree} input-bound: training waits for the next batch",
                       tuple(evidence), cpu_pattern=pattern, facts=facts)

    mem, total = m.gpu_memory_used_max_bytes, m.gpu_memory_total_bytes
    if mem is not None and total and mem / total >= T.GPU_MEMORY_FULL_FRAC:
        evidence += [f"GPU memory {pct(mem / total)} full ({mem / 2**30:.1f} of {total / 2**30:.1f} GiB); frameworks "
                     "may preallocate, so this is an upper bound on real use", CAVEAT]
        return Verdict("memory", "low", "GPU memory is nearly full", tuple(evidence), facts=facts)
    confidence = "low" if noisy else "medium"
    if m.gpu_util_pct is not None:
        evidence.append(f"GPU busy {m.gpu_util_pct:.0f}% (NVML utilization) while training hardly waited for input")
        evidence.append(CAVEAT)
        if m.gpu_util_pct < T.GPU_BUSY_FOR_COMPUTE_PCT:
            return Verdict("host", confidence, "host-bound: the GPU is mostly idle though input is not the holdup "
                           "(per-step overhead)", tuple(evidence), facts=facts)
        return Verdict("compute", confidence, "compute-bound: the step itself is the limit", tuple(evidence), facts=facts)
    evidence.append(f"no GPU data ({m.gpu_util_reason or 'no GPU readings'}): host and compute cannot be told apart")
    evidence.append(CAVEAT)
    return Verdict("compute", "low", "compute-bound: the step itself is the limit, not the input",
                   tuple(evidence), facts=facts)
