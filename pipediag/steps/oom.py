"""Recognising out-of-memory errors from any framework without importing it.

TensorFlow raises `ResourceExhaustedError` ("OOM when allocating tensor ..."), JAX raises
`XlaRuntimeError`/`JaxRuntimeError` whose text starts with RESOURCE_EXHAUSTED, PyTorch raises
`torch.OutOfMemoryError` ("CUDA out of memory") on the GPU and a RuntimeError ("can't allocate
memory") on the CPU. Matching on type names and message text keeps this module free of all three.
"""

from __future__ import annotations

_OOM_TYPE_NAMES = {"ResourceExhaustedError", "OutOfMemoryError", "MemoryError"}
_OOM_TEXT = ("RESOURCE_EXHAUSTED", "out of memory", "OOM when allocating", "Out of memory", "can't allocate memory")


def is_out_of_memory(error: BaseException) -> bool:
    for cls in type(error).__mro__:
        if cls.__name__ in _OOM_TYPE_NAMES:
            return True
    text = str(error)
    return any(marker in text for marker in _OOM_TEXT)


def framework_of(error: BaseException) -> str:
    module = type(error).__module__ or ""
    for name in ("tensorflow", "jax", "jaxlib", "torch", "keras"):
        if module.startswith(name):
            return "jax" if name == "jaxlib" else name
    return "python"
