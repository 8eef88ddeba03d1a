"""GPU readings from NVML: utilization, memory, power and SM clock, per device.

Any metric NVML cannot give is None in the reading, and the first reason it gave is kept in
`metric_reasons`; with no NVML at all, `unavailable_reason` says why and readings are empty.
"""

from __future__ import annotations

from typing import Any

from pipediag.backends import nvml
from pipediag.samples.readings import GpuDevice, GpuReading


class GpuReader:
    """Opens NVML once; `read()` returns one GpuReading per device, never raising."""

    def __init__(self, lib: Any | None = None):
        self._lib = lib
        self._session: nvml.NvmlSession | None = None
        self._handles: list[Any] = []
        self.devices: tuple[GpuDevice, ...] = ()
        self.driver_version: str | None = None
        self.unavailable_reason: str | None = "NVML was not opened"
        self.metric_reasons: dict[str, str] = {}
        self.opened = False

    def open(self) -> GpuReader:
        """Start NVML and list the devices; afterwards `unavailable_reason` says why not, if not."""
        if self.opened:
            return self
        self.opened = True
        session = nvml.open_session(self._lib)
        if isinstance(session, nvml.NotAvailable):
            self.unavailable_reason = session.reason
            return self
        self._session = session
        self.unavailable_reason = None
        driver = session.query("nvmlSystemGetDriverVersion")
        self.driver_version = nvml.to_text(driver) if nvml.is_available(driver) else None
        devices = []
        for index in range(session.query("nvmlDeviceGetCount")):
            handle = session.query("nvmlDeviceGetHandleByIndex", index)
            if not nvml.is_available(handle):
                self.metric_reasons.setdefault("device", handle.reason)
                continue
            self._handles.append((index, handle))
            name = session.query("nvmlDeviceGetName", handle)
            memory = session.query("nvmlDeviceGetMemoryInfo", handle)
            devices.append(
                GpuDevice(
                    index=index,
                    name=nvml.to_text(name) if nvml.is_available(name) else "unknown GPU",
                    memory_total_bytes=int(memory.total) if nvml.is_available(memory) else None,
                )
            )
        self.devices = tuple(devices)
        return self

    @property
    def available(self) -> bool:
        return self._session is not None

    def read(self) -> tuple[GpuReading, ...]:
        if self._session is None:
            return ()
        return tuple(self._read_one(index, handle) for index, handle in self._handles)

    def _value(self, metric: str, value: Any, convert) -> Any:
        if nvml.is_available(value):
            return convert(value)
        self.metric_reasons.setdefault(metric, value.reason)
        return None

    def _read_one(self, index: int, handle: Any) -> GpuReading:
        q = self._session.query
        util = q("nvmlDeviceGetUtilizationRates", handle)
        memory = q("nvmlDeviceGetMemoryInfo", handle)
        power = q("nvmlDeviceGetPowerUsage", handle)
        clock = q("nvmlDeviceGetClockInfo", handle, getattr(self._session.lib, "NVML_CLOCK_SM", 1))
        return GpuReading(
            index=index,
            util_pct=self._value("util_pct", util, lambda u: float(u.gpu)),
            memory_used_bytes=self._value("memory_used_bytes", memory, lambda m: int(m.used)),
            memory_total_bytes=self._value("memory_total_bytes", memory, lambda m: int(m.total)),
            power_w=self._value("power_w", power, lambda mw: mw / 1000.0),
            sm_clock_mhz=self._value("sm_clock_mhz", clock, float),
        )

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
