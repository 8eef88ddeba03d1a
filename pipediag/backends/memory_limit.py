"""Simulating a smaller GPU (`--gpu-memory-limit MB`) for each framework, in the order each needs.

- JAX reads `XLA_PYTHON_CLIENT_MEM_FRACTION` once, when its GPU backend starts (the first
  `jax.devices()` or computation, not `import jax`). The fraction caps JAX's allocator whether
  or not it preallocates. So it must be set before the user's code is loaded: a step factory
  that builds its parameters starts the backend. If the backend is already running, the limit
  cannot apply, and pipediag says so rather than pretend.
- TensorFlow: a logical device with `memory_limit` on each physical GPU, before TensorFlow
  initialises its GPUs (also before the user's code runs).
- PyTorch: `torch.cuda.set_per_process_memory_fraction`, any time before the allocations it
  should limit; applied after the user's code is loaded (which is what imports torch).

The fractions are of the GPU's total memory, read from NVML by the caller.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

from pipediag.records.memory import MemoryLimit

JAX_FRACTION_VAR = "XLA_PYTHON_CLIENT_MEM_FRACTION"


def jax_backend_started() -> bool:
    """Has JAX already started a backend in this process (so its memory settings are fixed)?"""
    if "jax" not in sys.modules:
        return False
    bridge = sys.modules.get("jax._src.xla_bridge")
    started = getattr(bridge, "backends_are_initialized", None)
    if callable(started):
        return bool(started())
    return bool(getattr(bridge, "_backends", None))


def before_user_code(limit: MemoryLimit, environ: MutableMapping[str, str] = os.environ) -> None:
    """Everything that must happen before the user's code starts a framework: JAX's fraction,
    TensorFlow's logical devices."""
    fraction = f"{limit.fraction:.4f}"
    if jax_backend_started():
        limit.not_applied.append(
            "jax: its GPU backend had already started, so XLA_PYTHON_CLIENT_MEM_FRACTION cannot change now "
            "(set it before the first JAX computation)"
        )
    else:
        previous = environ.get(JAX_FRACTION_VAR)
        environ[JAX_FRACTION_VAR] = fraction
        was = f" (was {previous})" if previous else ""
        limit.applied.append(f"jax: {JAX_FRACTION_VAR}={fraction}{was}, read when its GPU backend starts")
    _limit_tensorflow(limit)  # pipediag feeds every step from tf.data: TensorFlow is always there


def _limit_tensorflow(limit: MemoryLimit) -> None:
    from pipediag.backends.tf import tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:  # a CPU build (as on the H200 validation runs): it holds no GPU memory to limit
        return
    megabytes = limit.limit_bytes // 2**20
    try:
        for gpu in gpus:
            tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=megabytes)])
    except RuntimeError as error:  # the GPUs were initialised already
        limit.not_applied.append(f"tensorflow: {error}")
        return
    limit.applied.append(f"tensorflow: a logical device with memory_limit={megabytes} MB on each of {len(gpus)} GPU(s)")


def after_user_code(limit: MemoryLimit) -> None:
    """PyTorch, once the user's code has imported it: a per-process fraction of each GPU."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available():
        return
    for index in range(cuda.device_count()):
        cuda.set_per_process_memory_fraction(limit.fraction, index)
    limit.applied.append(f"torch: set_per_process_memory_fraction({limit.fraction:.4f}) on {cuda.device_count()} GPU(s)")
