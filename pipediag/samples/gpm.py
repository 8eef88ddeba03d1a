"""GPM (GPU Performance Monitoring, Hopper and newer): how much of the chip was working.

NVML's "utilization" says only that *a* kernel ran; one tiny kernel reads 100%. GPM counts what
the SMs, tensor cores and DRAM did between two samples. NVML's recipe: allocate two sample
buffers, take a sample, take another later, and ask `nvmlGpmMetricsGet` for the metrics between
them. Its documentation asks for more than 100 ms between the two (the counters refresh at that
rate), so a reading closer than `MIN_INTERVAL_S` to the previous one is skipped, not guessed.

Each reading is the average over the time since the previous GPM sample; the sampler's readings
cover the time before them in the same way, so the windows line up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pipediag.backends import nvml

# reading field -> (pynvml constant, its value in nvml.h): the metrics pipediag asks for.
GPM_METRICS: dict[str, tuple[str, int]] = {
    "gpm_sm_active_pct": ("NVML_GPM_METRIC_SM_UTIL", 2),
    "gpm_sm_occupancy_pct": ("NVML_GPM_METRIC_SM_OCCUPANCY", 3),
    "gpm_tensor_active_pct": ("NVML_GPM_METRIC_ANY_TENSOR_UTIL", 5),
    "gpm_dram_bw_pct": ("NVML_GPM_METRIC_DRAM_BW_UTIL", 10),
    "gpm_fp32_active_pct": ("NVML_GPM_METRIC_FP32_UTIL", 12),
    "gpm_fp16_active_pct": ("NVML_GPM_METRIC_FP16_UTIL", 13),
    "pcie_tx_mib_per_s": ("NVML_GPM_METRIC_PCIE_TX_PER_SEC", 20),
    "pcie_rx_mib_per_s": ("NVML_GPM_METRIC_PCIE_RX_PER_SEC", 21),
}
MIN_INTERVAL_S = 0.1


class GpmDevice:
    """GPM on one device. `open()` returns None or why GPM cannot be used; `read()` returns
    {field: value or NotAvailable}, or None when too little time has passed since the last one."""

    def __init__(self, session: nvml.NvmlSession, handle: Any, clock_s: Callable[[], float] = time.monotonic):
        self._session = session
        self._handle = handle
        self._clock_s = clock_s
        self._previous: Any = None
        self._current: Any = None
        self._previous_s: float | None = None
        self._ids = {name: getattr(session.lib, const, default) for name, (const, default) in GPM_METRICS.items()}

    def open(self) -> nvml.NotAvailable | None:
        q = self._session.query
        support = q("nvmlGpmQueryDeviceSupport", self._handle)
        if not nvml.is_available(support):
            return nvml.NotAvailable(f"GPM: {support.reason} (GPM needs a Hopper or newer GPU and driver)",
                                     support.kind)
        if not getattr(support, "isSupportedDevice", 0):
            return nvml.NotAvailable("GPM is not supported on this GPU (it needs Hopper or newer)",
                                     "NVMLError_NotSupported")
        first, second = q("nvmlGpmSampleAlloc"), q("nvmlGpmSampleAlloc")
        for buffer in (first, second):
            if not nvml.is_available(buffer):
                self._free(first, second)
                return nvml.NotAvailable(f"GPM: {buffer.reason}", buffer.kind)
        taken = q("nvmlGpmSampleGet", self._handle, first)
        if not nvml.is_available(taken):
            self._free(first, second)
            return nvml.NotAvailable(f"GPM: {taken.reason}", taken.kind)
        self._previous, self._current, self._previous_s = first, second, self._clock_s()
        return None

    def read(self) -> dict[str, Any] | None | nvml.NotAvailable:
        if self._previous is None:
            return nvml.NotAvailable("GPM was not opened")
        now = self._clock_s()
        if now - self._previous_s < MIN_INTERVAL_S:
            return None
        taken = self._session.query("nvmlGpmSampleGet", self._handle, self._current)
        if not nvml.is_available(taken):
            return taken
        values = nvml.gpm_metrics(self._session, self._previous, self._current, list(self._ids.values()))
        # The newer sample becomes the start of the next interval, whatever the metrics said.
        self._previous, self._current, self._previous_s = self._current, self._previous, now
        if not nvml.is_available(values):
            return values
        return {name: values[metric_id] for name, metric_id in self._ids.items()}

    def close(self) -> None:
        self._free(self._previous, self._current)
        self._previous = self._current = None

    def _free(self, *buffers: Any) -> None:
        for buffer in buffers:
            if buffer is not None and nvml.is_available(buffer):
                self._session.query("nvmlGpmSampleFree", buffer)
