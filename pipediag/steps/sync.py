"""Waiting until a step's result is really computed, whatever framework produced it.

Frameworks return before the accelerator has finished: JAX dispatches asynchronously, PyTorch
queues CUDA kernels, TensorFlow's GPU ops run on streams. A timer stopped at `return` would time
the dispatch, not the work. Frameworks are recognised by the result's type, never imported here
unless the result already came from them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif value is not None:
        yield value


def wait_until_computed(result: Any) -> None:
    torch_synced = tf_synced = False
    for leaf in _leaves(result):
        module = type(leaf).__module__ or ""
        if hasattr(leaf, "block_until_ready"):  # jax.Array
            leaf.block_until_ready()
        elif module.startswith("torch") and not torch_synced:
            if getattr(leaf, "is_cuda", False):
                sys.modules["torch"].cuda.synchronize()
            torch_synced = True
        elif module.startswith("tensorflow") and not tf_synced:
            _sync_tensorflow(leaf)
            tf_synced = True


def _sync_tensorflow(leaf: Any) -> None:
    device = getattr(leaf, "device", "") or ""
    if "GPU" in device.upper() or "TPU" in device.upper():
        from pipediag.backends.tf import tf

        tf.test.experimental.sync_devices()
