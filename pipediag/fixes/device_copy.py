"""The device copy in line before each step, for an input verdict: when to offer prefetching to the device.

An input verdict says the pipeline does not deliver what the free step takes. Where each batch is
also copied to the GPU before its step, that copy waits in line as well: training fed by the
pipeline then runs clearly below what the pipeline alone delivers, and copying the next batch while
the step runs (`prefetch_to_device`) takes back part of that gap, even though no pipeline stage
changes. Seen on the H200 (docs/gpu-validation.md, run 23): a Keras CNN fed 12-MiB float32 batches,
pipediag's hand-over timed a 0.58-ms copy (0.40x the free step), training ran 0.70x the pipeline
alone, and in plain TensorFlow `prefetch_to_device('/gpu:0')` trained 1.15x the original pipeline
while caching the decode (10x faster alone) trained slower.

Offered unmeasured (pipediag's tuned mode changes the pipeline, not where its batches land), and
only when both readings point at it:
- the copy, timed by the hand-over, is at least DEVICE_COPY_SHARE of the free step;
- input alone ran at least GAP_SIGNIFICANT times training fed by the pipeline, the intervals apart:
  training lost more than the pipeline's own limit explains.
Plain numbers in, a sentence out.
"""

from __future__ import annotations

from pipediag.analysis.modes import ModeSummary, rate_ratio
from pipediag.records.verdict import Verdict
from pipediag.verdict import thresholds as T


def copy_in_line_basis(verdict: Verdict, pipeline: ModeSummary | None, input_only: ModeSummary | None) -> str | None:
    """Why copying the next batch to the device during the step would help, or None when the
    readings do not show it (not an input verdict, no device copy timed, a copy too small to
    matter, or training fed about as fast as the pipeline alone delivers)."""
    if verdict.bottleneck != "input":
        return None
    copy_ms, share = verdict.facts.get("transfer_ms"), verdict.facts.get("transfer_over_free_step")
    if copy_ms is None or share is None or share < T.DEVICE_COPY_SHARE:
        return None
    lost = rate_ratio(input_only, pipeline)  # > 1: training fed by the pipeline ran below the pipeline alone
    if lost is None or lost.value < T.GAP_SIGNIFICANT or lost.low is None or lost.low <= 1.0:
        return None
    return (f"not measured: each batch's copy to the device took {copy_ms:.2f} ms ({share:.2f}x the free step) and "
            f"was made before its step, and training fed by the pipeline ran {pipeline.batches_per_sec:.1f} batches/s, "
            f"1/{lost.value:.2f} of the {input_only.batches_per_sec:.1f} the pipeline delivered alone: a copy made "
            "while the step before it runs takes it out of line (a tf.distribute strategy's input may do so already)")
