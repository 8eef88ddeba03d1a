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


_FRAMEWORKS = ("tensorflow", "jax", "jaxlib", "torch", "keras")
# Builtin exceptions (PyTorch raises RuntimeError from C++) name their framework in the text.
_TEXT_FRAMEWORKS = (("DefaultCPUAllocator", "torch"), ("CUDACachingAllocator", "torch"),
                    ("CUDA out of memory", "torch"), ("OOM when allocating", "tensorflow"))


def _framework_of_module(module: str) -> str | None:
    for name in _FRAMEWORKS:
        if module == name or module.startswith(name + "."):
            return "jax" if name == "jaxlib" else name
    return None


def framework_of(error: BaseException) -> str:
    """The framework that raised: by the exception's module, else its message, else the deepest
    traceback frame inside a framework; "python" when none says."""
    found = _framework_of_module(type(error).__module__ or "")
    if found:
        return found
    text = str(error)
    for marker, name in _TEXT_FRAMEWORKS:
        if marker in text:
            return name
    tb, deepest = error.__traceback__, None
    while tb is not None:
        deepest = _framework_of_module(tb.tb_frame.f_globals.get("__name__", "")) or deepest
        tb = tb.tb_next
    return deepest or "python"
