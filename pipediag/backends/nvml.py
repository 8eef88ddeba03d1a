"""NVML, imported once, behind a query function that never raises mid-run.

`Nvml.open()` returns a session or the reason NVML cannot be used (no library, no driver, no GPU).
`session.query(fn_name, *args)` calls one NVML function and returns its value, or `NotAvailable`
with the NVML error text when that metric is not supported or fails. The library object is
injected, so tests and `--demo` drive the same code with the scripted fake in `fake_nvml`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class NotAvailable:
    """A metric that could not be read, and why. Never mistaken for a zero."""

    reason: str

    def __bool__(self) -> bool:  # `if value:` must not treat it as a reading
        return False


def is_available(value: Any) -> bool:
    return not isinstance(value, NotAvailable)


def load_pynvml() -> Any | NotAvailable:
    try:
        import pynvml  # the nvidia-ml-py distribution
    except ImportError as error:
        return NotAvailable(f"pynvml is not installed ({error}); pip install nvidia-ml-py")
    return pynvml


class NvmlSession:
    """An initialised NVML library. Thread-safe for the sampler thread and the caller."""

    def __init__(self, lib: Any):
        self.lib = lib
        self._lock = threading.Lock()
        self._closed = False

    def query(self, fn_name: str, *args: Any) -> Any:
        with self._lock:
            if self._closed:
                return NotAvailable("NVML session closed")
            try:
                return getattr(self.lib, fn_name)(*args)
            except self.lib.NVMLError as error:
                return NotAvailable(f"{fn_name}: {error}")
            except AttributeError:
                return NotAvailable(f"{fn_name} is not in this NVML binding")

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self.lib.nvmlShutdown()
                except self.lib.NVMLError:
                    pass


def open_session(lib: Any | None = None) -> NvmlSession | NotAvailable:
    """Initialise NVML (the real pynvml unless `lib` is given). Returns why not, when it cannot."""
    if lib is None:
        lib = load_pynvml()
        if isinstance(lib, NotAvailable):
            return lib
    try:
        lib.nvmlInit()
    except lib.NVMLError as error:
        return NotAvailable(f"NVML could not start ({error}): no NVIDIA driver on this machine?")
    session = NvmlSession(lib)
    count = session.query("nvmlDeviceGetCount")
    if isinstance(count, NotAvailable):
        session.close()
        return count
    if count == 0:
        session.close()
        return NotAvailable("NVML found no NVIDIA GPU")
    return session


def to_text(value: Any) -> str:
    """NVML returns bytes in old bindings and str in new ones."""
    return value.decode() if isinstance(value, bytes) else str(value)
