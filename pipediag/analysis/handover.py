"""The hand-over: what it costs to give the step one batch that is already produced.

A training loop pays, for every batch, `get_next` on the tf.data iterator, the conversion to what
the step takes (NumPy, DLPack, Keras' adapter) and, for JAX and PyTorch on an accelerator, the
copy to the device. Under a tf.distribute strategy the iterator is the strategy's distributed one,
whose `get_next` splits the batch per replica and puts each slice on its device: its per-call
cost is part of the hand-over. None of that is the pipeline's work: a pipeline with infinite speed still
costs it. pipediag times it on a dataset that only repeats one cached batch, through the same
feed (modes/handover.py), and keeps it here as plain numbers. When the step is tiny, this can
cost as much as the step itself; no input change can remove it (docs/verdict.md, the host edge).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from pipediag import stats
from pipediag.records.record import with_tuples
from pipediag.records.run import ModeRun

NS_PER_MS = 1e6


@dataclass(frozen=True)
class Handover:
    batches: int  # timed hand-overs
    ms_mean: float  # per batch: get_next + conversion + device copy
    ms_mean_ci: tuple[float, float] | None  # 95%, batch means (consecutive timings are correlated)
    fetch_ms_mean: float  # get_next + conversion
    fetch_ms_mean_ci: tuple[float, float] | None
    transfer_ms_mean: float | None  # the device copy; None: none made (transfer_text says why)
    batch_format: str
    transfer_text: str  # how the device copy was made, or why none was
    through: str | None = None  # the distributed iterator the batch came through (a tf.distribute loop); None: a plain one
    # `pipediag run` on a loop over a distributed dataset: the user's pipeline alone read through a
    # plain tf.data iterator (batches/s and its 95% interval), beside the input_only window read
    # through `through`. None where not read (diagnose, a plain loop). Their difference is what the
    # distributed iterator costs the loop for each batch of this pipeline (verdict.handover_edge).
    plain_batches_per_sec: float | None = None
    plain_batches_per_sec_ci: tuple[float, float] | None = None
    # ... and whether that loop's `next()` on the distributed iterator takes TensorFlow's partial-
    # batch path (modes.distributed.partial_batch_handling); None: not known, or not such a loop.
    partial_batches: bool | None = None
    # get_next and conversion of the same ready batch with the step run between the calls, as in
    # pipeline mode's loop (mean ms, its 95% interval, how many timed). A step that keeps the host
    # busy makes get_next cost more than with nothing between the calls: on an H100, a tiny Keras step on
    # TensorFlow's GPU build, 0.295 ms beside the step against 0.124 ms alone, and pipeline mode
    # waited 0.300 ms (benchmarks/tf_gpu/handover_beside_step.py, docs/gpu-validation.md). Timed
    # only where the reading alone leaves the step's wait unexplained (verdict.handover_edge.
    # wants_beside_step); None otherwise.
    beside_step_fetch_ms_mean: float | None = None
    beside_step_fetch_ms_mean_ci: tuple[float, float] | None = None
    beside_step_batches: int | None = None

    @property
    def beside_step_fetch_ms_high(self) -> float | None:
        """The upper end of the beside-the-step reading's interval (its mean without one), or None."""
        if self.beside_step_fetch_ms_mean is None:
            return None
        ci = self.beside_step_fetch_ms_mean_ci
        return ci[1] if ci else self.beside_step_fetch_ms_mean

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Handover:
        return cls(**with_tuples(d, ("ms_mean_ci", "fetch_ms_mean_ci", "plain_batches_per_sec_ci",
                                     "beside_step_fetch_ms_mean_ci")))


def _ms_ci(values: tuple[int, ...]) -> tuple[float, float] | None:
    ci = stats.batch_means_ci(values)
    return None if ci is None else (ci[0] / NS_PER_MS, ci[1] / NS_PER_MS)


def handover_from_run(run: ModeRun, batch_format: str, transfer_text: str, transferred: bool,
                      through: str | None = None) -> Handover | None:
    """The hand-over's numbers from its timed run: the wait is get_next and the conversion, the
    'step' is the device copy. None when nothing was timed."""
    if not run.steps:
        return None
    return Handover(
        batches=run.steps,
        ms_mean=stats.mean(run.step_ns) / NS_PER_MS,
        ms_mean_ci=_ms_ci(run.step_ns),
        fetch_ms_mean=stats.mean(run.wait_ns) / NS_PER_MS,
        fetch_ms_mean_ci=_ms_ci(run.wait_ns),
        transfer_ms_mean=stats.mean(run.compute_ns) / NS_PER_MS if transferred else None,
        batch_format=batch_format,
        transfer_text=transfer_text,
        through=through,
    )


def with_beside_step(handover: Handover, run: ModeRun) -> Handover:
    """`handover` with the ready batch's get_next timed again beside the step (`run`: its waits);
    unchanged when nothing was timed."""
    if not run.steps:
        return handover
    return replace(handover, beside_step_fetch_ms_mean=stats.mean(run.wait_ns) / NS_PER_MS,
                   beside_step_fetch_ms_mean_ci=_ms_ci(run.wait_ns), beside_step_batches=run.steps)


def distributed_iterator_text(through_batches_per_sec: float | None, plain_batches_per_sec: float | None,
                              through: str, loop_wait_ms: float | None) -> str | None:
    """What a tf.distribute loop's iterator adds to the pipeline: the pipeline alone read through
    `through` and through a plain tf.data iterator, as one line for the report, or None when
    either rate is missing. Measured on the H200 (2026-12-04, benchmarks/results/run-scripts-gpu-*):
    the same pipeline ran 460 batches/s through MirroredStrategy's distributed iterator on one GPU
    and 6,644 through a plain one, and the loop waited 2.7 ms of its 5.8-ms steps: a cost of the
    distribution on the loop's own thread, which a faster pipeline does not remove."""
    if not through_batches_per_sec or not plain_batches_per_sec:
        return None
    added_ms = 1e3 / through_batches_per_sec - 1e3 / plain_batches_per_sec
    waited = f"; your loop waited {loop_wait_ms:.2f} ms a step for its next batch" if loop_wait_ms is not None else ""
    if added_ms <= 0:
        return (f"the pipeline alone ran {through_batches_per_sec:.0f} batches/s through {through} and "
                f"{plain_batches_per_sec:.0f} through a plain tf.data iterator: the distributed iterator adds nothing "
                f"measurable to it{waited}")
    return (f"the pipeline alone ran {through_batches_per_sec:.0f} batches/s through {through} and "
            f"{plain_batches_per_sec:.0f} through a plain tf.data iterator: the distributed iterator adds "
            f"{added_ms:.2f} ms to every batch{waited}. That part of a wait is tf.distribute's own work on your "
            "loop's thread, not the pipeline's: a pipeline change does not remove it (on one device, a loop "
            "without the strategy does not pay it)")
