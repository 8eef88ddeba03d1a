"""NVML, imported once, behind a query function that never raises mid-run.

`Nvml.open()` returns a session or the reason NVML cannot be used (no library, no driver, no GPU).
`session.query(fn_name, *args)` calls one NVML function and returns its value, or `NotAvailable`
with the NVML error text when that metric is not supported or fails. The library object is
injected, so tests and `--demo` drive the same code with the scripted fake in `fake_nvml`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# NVML errors that say "this GPU or driver will never give this": a reader stops asking.
_NEVER = ("NVMLError_NotSupported", "NVMLError_FunctionNotFound", "NVMLError_NoPermission",
          "NVMLError_ArgumentVersionMismatch", "missing")


@dataclass(frozen=True)
class NotAvailable:
    """A metric that could not be read, and why. Never mistaken for a zero.

    `kind` is the NVML error class name (e.g. NVMLError_NotSupported, NVMLError_NotFound), or
    "missing" when the binding lacks the function; empty when not from an NVML call.
    """

    reason: str
    kind: str = ""

    def __bool__(self) -> bool:  # `if value:` must not treat it as a reading
        return False

    @property
    def permanent(self) -> bool:
        """Not supported here at all (as opposed to a failure that may pass)."""
        return self.kind in _NEVER


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
        fn = getattr(self.lib, fn_name, None)
        if fn is None:
            return NotAvailable(f"{fn_name} is not in this NVML binding", "missing")
        return self.call(fn_name, fn, *args)

    def call(self, label: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` under the session lock; an NVML error becomes NotAvailable."""
        with self._lock:
            if self._closed:
                return NotAvailable("NVML session closed")
            try:
                return fn(*args)
            except self.lib.NVMLError as error:
                return NotAvailable(f"{label}: {error}", type(error).__name__)
            except AttributeError as error:  # an older binding without a struct or constant
                return NotAvailable(f"{label}: this NVML binding lacks {error.name or error}", "missing")

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


def sample_value(value_type: int, sample: Any) -> float:
    """The number in an `nvmlSample_t`, whose union member depends on NVML's value type."""
    field = _VALUE_FIELDS.get(value_type, "uiVal")
    return float(getattr(sample.sampleValue, field))


# nvmlValueType_t -> the member of nvmlValue_t that holds it.
_VALUE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def gpm_metrics(session: NvmlSession, sample1: Any, sample2: Any, metric_ids: Sequence[int]) -> Any:
    """GPM metrics between two samples: {metric_id: value or NotAvailable}, or NotAvailable.

    Builds pynvml's `c_nvmlGpmMetricsGet_t` request as NVML documents it (version, count,
    the two samples, one metricId per slot) and reads back each slot's own return code.
    """
    lib = session.lib

    def get() -> dict[int, Any]:
        request = lib.c_nvmlGpmMetricsGet_t()
        request.version = lib.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(metric_ids)
        request.sample1 = sample1
        request.sample2 = sample2
        for slot, metric_id in enumerate(metric_ids):
            request.metrics[slot].metricId = metric_id
        lib.nvmlGpmMetricsGet(request)
        out: dict[int, Any] = {}
        for slot, metric_id in enumerate(metric_ids):
            metric = request.metrics[slot]
            value = float(metric.value)
            if metric.nvmlReturn != getattr(lib, "NVML_SUCCESS", 0):
                out[metric_id] = NotAvailable(f"GPM metric {metric_id}: NVML error {metric.nvmlReturn}",
                                              "NVMLError_NotSupported" if metric.nvmlReturn == 3 else "")
            elif not math.isfinite(value):
                out[metric_id] = NotAvailable(f"GPM metric {metric_id}: not a number ({value})")
            else:
                out[metric_id] = value
        return out

    return session.call("nvmlGpmMetricsGet", get)


def to_text(value: Any) -> str:
    """NVML returns bytes in old bindings and str in new ones."""
    return value.decode() if isinstance(value, bytes) else str(value)
