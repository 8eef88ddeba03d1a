"""Feeding a step that runs on several devices through a `tf.distribute` strategy.

A Keras model built under `strategy.scope()` (it keeps the strategy: `model.distribute_strategy`),
or a `--step` function that carries its strategy as `step.distribute_strategy`, takes per-replica
batches: `strategy.experimental_distribute_dataset(dataset)` splits each global batch into one slice
per replica and copies each slice to its device (a `MultiDeviceIterator` that prefetches to every
device), as `fit` and a custom loop over the distributed dataset do. pipediag feeds such a step the
same way:

- pipeline and tuned modes: the user's dataset through `experimental_distribute_dataset`;
- synthetic mode: one global batch, distributed once and held on the devices, handed out forever:
  free input for every replica at once, so its rate is what all N devices take together;
- a plain batch reaching the step anyway (`compare`, `scale`): split here, one slice per replica
  (`experimental_distribute_values_from_function`), its copy then part of the step's time.

The input_only mode reads the pipeline without distributing it: what the host produces, to be
compared with what the N devices take. The hand-over (modes/handover.py) goes through the
distributed iterator, as the step's batches do: its per-call cost is paid whatever the pipeline.
"""

from __future__ import annotations

from typing import Any

from pipediag.backends.tf import tf
from pipediag.modes.feeds import BatchFeed


class DistributedFeed(BatchFeed):
    """A BatchFeed over `strategy.experimental_distribute_dataset(dataset)`."""

    def __init__(self, dataset, strategy: Any, **kw: Any):
        self.strategy = strategy
        super().__init__(dataset, "tf", **kw)

    def _new(self):
        return iter(self.strategy.experimental_distribute_dataset(self.dataset))

    def __call__(self) -> Any:
        kept = len(self.firsts)
        batch = super().__call__()
        if len(self.firsts) > kept:  # the first batches are kept whole, to compare with the plain pipeline's
            self.firsts[-1] = gathered(batch, self.strategy)
        return batch


def iterator_text(strategy: Any, made_by: str = "experimental_distribute_dataset") -> str:
    """The distributed iterator a step's batches come through, in words."""
    return (f"the distributed iterator of strategy.{made_by} ({type(strategy).__name__}, "
            f"{strategy.num_replicas_in_sync} replica(s))")


def gathered(batch: Any, strategy: Any) -> Any:
    """A per-replica batch put back together as one global batch, on the host."""
    def whole(value: Any) -> Any:
        if isinstance(value, tf.distribute.DistributedValues):
            with tf.device("/cpu:0"):
                return tf.concat([tf.identity(part) for part in strategy.experimental_local_results(value)], 0)
        return value

    return tf.nest.map_structure(whole, batch)


def distributed_constant(batch: Any, strategy: Any):
    """Synthetic mode's free input on every replica: one global batch distributed once."""
    one = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensors(batch))
    constant = next(iter(one))

    def feed() -> Any:
        return constant

    return feed




def partial_batch_handling(dataset: Any, strategy: Any) -> bool | None:
    """Whether `strategy`'s distributed iterator over `dataset` takes TensorFlow's partial-batch
    path for every batch (get_next_as_optional, which also checks whether each replica got data):
    TensorFlow takes it (input_lib._enable_get_next_as_optional, TF 2.21) when the strategy handles
    partial batches, the dataset is not infinite, and its element shapes are not static (a batch
    without drop_remainder). Its own comment says this path is slower; on the H200 (2026-12-04,
    benchmarks/tf_gpu/distributed_fixes.py) the TF tutorial's MirroredStrategy loop ran 1.79x with
    drop_remainder=True and 1.95x with repeat(). None when it cannot be told."""
    extended = getattr(strategy, "extended", None)
    enabled = getattr(extended, "enable_partial_batch_handling",
                      getattr(extended, "experimental_enable_get_next_as_optional", None))
    if enabled is None:
        return None
    try:
        infinite = int(dataset.cardinality()) == int(tf.data.INFINITE_CARDINALITY)
        static = all(spec.shape.is_fully_defined() for spec in tf.nest.flatten(dataset.element_spec)
                     if hasattr(spec, "shape"))
    except (AttributeError, TypeError, ValueError, tf.errors.OpError):
        return None
    return bool(enabled) and not infinite and not static
