"""Waiting until a step's result is really computed, whatever framework produced it.

Frameworks return before the accelerator has finished: JAX dispatches asynchronously, PyTorch
queues CUDA kernels, TensorFlow's GPU ops run on streams. A timer stopped at `return` would time
the dispatch, not the work. Frameworks are recognised by the result's type and reached through
`sys.modules`: never imported here unless the user's code already imported them.

A step that returns nothing to wait on (None) gets a device barrier instead:
`torch.cuda.synchronize()`, a tiny JAX computation queued behind the step's own on each device
of JAX's default backend, or TensorFlow's `sync_devices` on a GPU.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

HOST = "host"  # the result is plain Python or NumPy: computed by the time it exists


def leaves(value: Any) -> Iterator[Any]:
    """The arrays and plain values in a result: dicts, lists and tuples opened, and a
    `tf.distribute` per-replica value opened into its one tensor per replica."""
    if isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from leaves(v)
    elif _distributed(value):
        for v in value.values:
            yield from leaves(v)
    elif value is not None:
        yield value


def _distributed(value: Any) -> bool:
    """A tf.distribute DistributedValues (PerReplica, Mirrored): `.values` holds a tensor per replica."""
    return (type(value).__module__ or "").startswith("tensorflow.python.distribute") and \
        isinstance(getattr(value, "values", None), tuple)


def framework_of_value(leaf: Any) -> str | None:
    module = type(leaf).__module__ or ""
    if hasattr(leaf, "block_until_ready") or module.startswith(("jax", "jaxlib")):
        return "jax"
    if module.startswith("torch"):
        return "torch"
    if module.startswith(("tensorflow", "tf_keras", "keras")):
        return "tensorflow"
    return None


def wait_until_computed(result: Any) -> str | None:
    """Wait for every array in `result`. Returns the framework it waited for (jax, torch,
    tensorflow), HOST for a result of plain values, or None when the result held nothing."""
    torch_synced = tf_synced = False
    seen: str | None = None
    for leaf in leaves(result):
        framework = framework_of_value(leaf)
        if framework == "jax" and hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
        elif framework == "torch" and not torch_synced:
            if getattr(leaf, "is_cuda", False):
                sys.modules["torch"].cuda.synchronize()
            torch_synced = True
        elif framework == "tensorflow" and not tf_synced:
            _sync_tensorflow(leaf)
            tf_synced = True
        if framework is not None:
            seen = seen or framework
        elif seen is None:
            seen = HOST
    return seen


def _sync_tensorflow(leaf: Any) -> None:
    device = getattr(leaf, "device", "") or ""
    if "GPU" in device.upper() or "TPU" in device.upper():
        from pipediag.backends.tf import tf

        tf.test.experimental.sync_devices()


class DeviceBarrier:
    """Waits for all work queued on the devices of the frameworks already imported.

    What to wait for is decided at the first `wait()` (after the step has run once, so its
    framework has set up its device) and kept: checking again every step would cost more
    than the barrier itself.
    """

    def __init__(self) -> None:
        self._plan: list[str] | None = None
        self._jax_tokens: list[Any] = []

    @property
    def frameworks(self) -> list[str]:
        if self._plan is None:
            self._plan = self._frameworks_now()
        return list(self._plan)

    def _frameworks_now(self) -> list[str]:
        out = []
        torch = sys.modules.get("torch")
        if torch is not None and _torch_cuda_ready(torch):
            out.append("torch")
        devices = _jax_devices()
        if devices:
            jax = sys.modules["jax"]
            self._jax_tokens = [jax.device_put(0, d) for d in devices]
            out.append("jax")
        if "tensorflow" in sys.modules and _tf_has_gpu():
            out.append("tensorflow")
        return out

    def wait(self) -> list[str]:
        plan = self.frameworks
        if "torch" in plan:
            sys.modules["torch"].cuda.synchronize()
        # JAX executions run in order on each device's compute stream: this one finishes last.
        for token in self._jax_tokens:
            (token + 1).block_until_ready()
        if "tensorflow" in plan:
            from pipediag.backends.tf import tf

            tf.test.experimental.sync_devices()
        return plan


def _jax_devices() -> list[Any]:
    """The devices of JAX's default backend (its GPUs when it has them; else the CPU, where
    dispatch is asynchronous too)."""
    jax = sys.modules.get("jax")
    if jax is None or not hasattr(jax, "local_devices"):
        return []
    try:
        return list(jax.local_devices())
    except RuntimeError:  # no backend could start
        return []


def _torch_cuda_ready(torch: Any) -> bool:
    cuda = getattr(torch, "cuda", None)
    return bool(cuda is not None and cuda.is_available() and cuda.is_initialized())


def _tf_has_gpu() -> bool:
    from pipediag.backends.tf import tf

    return bool(tf.config.list_logical_devices("GPU"))
