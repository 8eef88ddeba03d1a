"""Whether the step ran TensorFlow eagerly, and what the same step ran at inside tf.function.

An eager TensorFlow step runs op by op from Python: every op is dispatched, and its gradient
read off the tape, by the interpreter on each call. Inside tf.function the step is traced once
into a graph that TensorFlow's runtime runs whole. On the 2-core development machine the TF
custom-training walkthrough's step (three Dense layers, SGD, two metrics) ran 26x as fast wrapped
in tf.function (1607 against 61 steps/s, plain TensorFlow, benchmarks/eager_step_truth.py,
2026-12-07): no input-side change, and no XLA flag on a `model.compile` that a custom loop never
calls, comes near that.

The eager reading is the count of `tape.gradient` calls made outside any tf.function over
synthetic mode's steps (backends.tf.eager_gradients_counted): a compiled step makes none after
its trace, an eager one at least one a step. Plain numbers in, a record out.
"""

from __future__ import annotations

from pipediag.analysis.modes import ModeSummary, ratio_of
from pipediag.records.step import EagerUse


def eager_use(eager_gradients: int, steps: int, eager_mode: ModeSummary | None = None,
              compiled_mode: ModeSummary | None = None, compiled_missing: str | None = None) -> EagerUse:
    """The reading from the count over synthetic mode's `steps` (warm-up included), with the rates
    of synthetic mode (`eager_mode`) and of the step wrapped in tf.function on the same batch
    (`compiled_mode`), where that ran; `compiled_missing` says why it did not."""
    use = EagerUse(eager_gradients=eager_gradients, steps=steps, compiled_missing=compiled_missing)
    if compiled_mode is None or eager_mode is None:
        return use
    ratio = ratio_of(compiled_mode.batches_per_sec, compiled_mode.batches_per_sec_ci,
                     eager_mode.batches_per_sec, eager_mode.batches_per_sec_ci)
    if ratio is None:
        return EagerUse(eager_gradients, steps, compiled_missing=compiled_missing or
                        "the step in tf.function finished no timed step")
    ci = (ratio.low, ratio.high) if ratio.low is not None and ratio.high is not None else None
    return EagerUse(eager_gradients, steps, compiled_rate=compiled_mode.batches_per_sec,
                    compiled_ci=compiled_mode.batches_per_sec_ci, eager_rate=eager_mode.batches_per_sec,
                    speedup=ratio.value, speedup_ci=ci)
