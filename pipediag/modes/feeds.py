"""Where each mode's batches come from (TensorFlow side).

`BatchFeed` iterates a dataset and, like an epoch loop, starts it again when it ends, counting
the restarts so the report can say so. `constant_feed` hands out one batch forever, placed on the
accelerator when TensorFlow has one: the synthetic mode's free input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipediag.backends.tf import tf
from pipediag.errors import UsageError


FIRST_BATCHES_KEPT = 3  # for comparing a rewritten pipeline's output with the original's


class BatchFeed:
    def __init__(self, dataset, batch_format: str = "tf", keep_first: int = FIRST_BATCHES_KEPT):
        self.dataset = dataset
        self.as_numpy = batch_format == "numpy"
        self.restarts = 0
        self.batches = 0
        self.first: Any = None
        self.firsts: list[Any] = []  # the first `keep_first` batches of the first pass
        self._keep = keep_first
        self._iterator = self._new()

    def _new(self):
        return self.dataset.as_numpy_iterator() if self.as_numpy else iter(self.dataset)

    def __call__(self) -> Any:
        try:
            batch = next(self._iterator)
        except StopIteration:
            self.restarts += 1
            self._iterator = self._new()
            try:
                batch = next(self._iterator)
            except StopIteration:
                raise UsageError(
                    "the dataset produced no batch when started again",
                    "a pipeline that is empty on its second pass (a one-shot generator?) cannot be timed; "
                    "make the builder's generator re-iterable",
                ) from None
        if self.batches == 0:
            self.first = batch
        if len(self.firsts) < self._keep and self.restarts == 0:
            self.firsts.append(batch)
        self.batches += 1
        return batch

    def close(self) -> None:
        self._iterator = None


def constant_feed(batch: Any, batch_format: str = "tf") -> Callable[[], Any]:
    if batch_format == "numpy":
        constant = next(tf.data.Dataset.from_tensors(batch).as_numpy_iterator())
    elif tf.config.list_logical_devices("GPU"):
        with tf.device("/GPU:0"):
            constant = tf.nest.map_structure(tf.identity, batch)
    else:
        constant = batch

    def feed() -> Any:
        return constant

    return feed


def same_structure(a: Any, b: Any) -> bool:
    try:
        tf.nest.assert_same_structure(a, b, expand_composites=True)
    except (ValueError, TypeError):
        return False
    return True


def same_batch(a: Any, b: Any) -> bool:
    """Element-wise equality of two batches of the same structure (ragged and sparse included)."""
    if not same_structure(a, b):
        return False
    for x, y in zip(tf.nest.flatten(a, expand_composites=True), tf.nest.flatten(b, expand_composites=True)):
        x, y = tf.convert_to_tensor(x), tf.convert_to_tensor(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype != tf.variant and not bool(tf.reduce_all(tf.equal(x, y)).numpy()):
            return False
    return True
