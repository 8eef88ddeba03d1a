"""Batch formats a --step receives: NumPy views and dlpack objects, without copies."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.modes.feeds import BatchFeed, DlpackTensor, constant_feed, same_batch  # noqa: E402


def dataset():
    x = np.arange(24, dtype="float32").reshape(6, 4)
    return tf.data.Dataset.from_tensor_slices((x, np.arange(6))).batch(3)


def test_numpy_batches_are_arrays():
    x, y = BatchFeed(dataset(), "numpy")()
    assert isinstance(x, np.ndarray) and x.shape == (3, 4) and y.tolist() == [0, 1, 2]


def test_dlpack_batches_go_into_jax_and_torch_unchanged():
    jnp = pytest.importorskip("jax.numpy")
    torch = pytest.importorskip("torch")
    feed = BatchFeed(dataset(), "dlpack")
    x, y = feed()
    assert isinstance(x, DlpackTensor) and x.shape == (3, 4) and x.__dlpack_device__() == (1, 0)
    assert np.array_equal(np.asarray(jnp.from_dlpack(x)), np.arange(12, dtype="float32").reshape(3, 4))
    assert torch.from_dlpack(y).tolist() == [0, 1, 2]
    assert same_batch(feed.firsts[0], next(iter(dataset())))  # the tuned-mode check sees through the wrapper


def test_dlpack_constant_feed_for_synthetic_mode():
    torch = pytest.importorskip("torch")
    batch = next(iter(dataset()))
    feed = constant_feed(batch, "dlpack")
    a, b = feed(), feed()
    assert a is b and torch.from_dlpack(a[0]).shape == (3, 4)
