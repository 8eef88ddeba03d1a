"""Where each mode's batches come from (TensorFlow side).

`BatchFeed` iterates a dataset and, like an epoch loop, starts it again when it ends, counting
the restarts so the report can say so. `close()` drops the iterator, which stops its background
work (prefetch, parallel calls); a later call starts a fresh one (`compare` does this after every
turn, so the idle side can neither stock batches nor take CPU during the other side's turn).
`constant_feed` hands out one batch forever, placed on the accelerator when TensorFlow has one:
the synthetic mode's free input.

Batch formats (what a `--step` receives): `tf` tensors; `numpy` arrays (`as_numpy_iterator`:
read-only views of the CPU tensors, no copy); `dlpack` objects, one per tensor, that JAX and
PyTorch import without a copy (`jnp.from_dlpack(x)`, `torch.from_dlpack(x)`). Tensors from a
CPU pipeline arrive as CPU arrays either way; the step moves them to its GPU (`jax.device_put`,
`.cuda()`), which is one host-to-device copy, part of the step's time in every mode.

A Keras model on the JAX or PyTorch backend (`--model` with KERAS_BACKEND=jax or torch) is fed
as Keras' own `fit` feeds it from a `tf.data.Dataset`: through Keras' `TFDatasetAdapter`
(`get_jax_iterator`: NumPy copies of the tensors; `get_torch_dataloader`: PyTorch tensors through
a `DataLoader`). Those formats (`keras-jax`, `keras-torch`) are chosen by the step, not the user.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipediag.backends.tf import tf
from pipediag.errors import UsageError


class DlpackTensor:
    """One TensorFlow tensor offered through the DLPack protocol, so `jnp.from_dlpack` and
    `torch.from_dlpack` take it without a copy. `.tensor` is the TensorFlow tensor itself."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Any):
        self.tensor = tensor

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        # TensorFlow exports a legacy (unversioned) capsule, which both consumers accept.
        return tf.experimental.dlpack.to_dlpack(self.tensor)

    def __dlpack_device__(self) -> tuple[int, int]:
        spec = tf.DeviceSpec.from_string(self.tensor.device or "/device:CPU:0")
        if (spec.device_type or "CPU").upper() == "GPU":
            return 2, spec.device_index or 0  # kDLCUDA
        return 1, 0  # kDLCPU

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)

    @property
    def dtype(self) -> Any:
        return self.tensor.dtype

    def __repr__(self) -> str:
        return f"DlpackTensor({self.tensor.dtype.name}{list(self.tensor.shape)})"


def as_dlpack(batch: Any) -> Any:
    return tf.nest.map_structure(DlpackTensor, batch)


KERAS_FORMATS = ("keras-jax", "keras-torch")


def keras_iterator(dataset, batch_format: str):
    """The iterator Keras' `fit` makes for a tf.data.Dataset on the JAX or PyTorch backend."""
    from pipediag.backends.tf import keras_data_adapter

    adapter = keras_data_adapter(dataset)
    if batch_format == "keras-jax":
        return iter(adapter.get_jax_iterator())
    return iter(adapter.get_torch_dataloader())


def _convert_one(batch: Any, batch_format: str) -> Any:
    """One batch converted as the feed of `batch_format` converts it."""
    one = tf.data.Dataset.from_tensors(batch)
    if batch_format == "numpy":
        return next(one.as_numpy_iterator())
    if batch_format == "dlpack":
        return as_dlpack(batch)
    if batch_format in KERAS_FORMATS:
        return next(keras_iterator(one, batch_format))
    return batch
FIRST_BATCHES_KEPT = 3  # for comparing a rewritten pipeline's output with the original's


class BatchFeed:
    def __init__(self, dataset, batch_format: str = "tf", keep_first: int = FIRST_BATCHES_KEPT):
        self.dataset = dataset
        self.batch_format = batch_format
        self.as_numpy = batch_format == "numpy"
        self.as_dlpack = batch_format == "dlpack"
        self.restarts = 0
        self.batches = 0
        self.firsts: list[Any] = []  # the first `keep_first` batches of the first pass
        self._keep = keep_first
        self._iterator = self._new()

    def _new(self):
        if self.as_numpy:
            return self.dataset.as_numpy_iterator()
        if self.as_dlpack:
            return map(as_dlpack, iter(self.dataset))
        if self.batch_format in KERAS_FORMATS:
            return keras_iterator(self.dataset, self.batch_format)
        return iter(self.dataset)

    def __call__(self) -> Any:
        if self._iterator is None:
            self._iterator = self._new()
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
        if len(self.firsts) < self._keep and self.restarts == 0:
            self.firsts.append(batch)
        self.batches += 1
        return batch

    def close(self) -> None:
        """Drop the iterator (its background threads stop); the next call starts a fresh one."""
        self._iterator = None


def constant_feed(batch: Any, batch_format: str = "tf") -> Callable[[], Any]:
    if batch_format != "tf":
        constant = _convert_one(batch, batch_format)
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


def _unwrap(x: Any) -> Any:
    if isinstance(x, DlpackTensor):
        return x.tensor
    if type(x).__module__.startswith("torch"):  # keras-torch batches: CPU PyTorch tensors
        return x.detach().cpu().numpy()
    return x


def same_batch(a: Any, b: Any) -> bool:
    """Element-wise equality of two batches of the same structure (ragged and sparse included)."""
    if not same_structure(a, b):
        return False
    for x, y in zip(tf.nest.flatten(a, expand_composites=True), tf.nest.flatten(b, expand_composites=True)):
        x, y = tf.convert_to_tensor(_unwrap(x)), tf.convert_to_tensor(_unwrap(y))
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype != tf.variant and not bool(tf.reduce_all(tf.equal(x, y)).numpy()):
            return False
    return True
