"""GPU readings from NVML, per device: utilization (also the driver's own sample buffer),
memory, power, clocks, PCIe throughput, this process's memory, and GPM where the GPU has it.

Any metric NVML cannot give is None in the reading, and the first reason it gave is kept in
`metric_reasons`; a metric NVML says it will never give (not supported, not in the binding) is
not asked for again. `metrics` names every metric that gave at least one reading, and where it
came from, so a report can say which metrics a run had. With no NVML at all,
`unavailable_reason` says why and readings are empty.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from pipediag.backends import nvml
from pipediag.records.readings import GpuDevice, GpuReading
from pipediag.samples.gpm import GpmDevice
from pipediag.samples.selection import GpuSelection

_GPM_FIELDS = ("gpm_sm_active_pct", "gpm_sm_occupancy_pct", "gpm_tensor_active_pct", "gpm_dram_bw_pct",
               "gpm_fp32_active_pct", "gpm_fp16_active_pct")
_MIB = 2**20
_KB = 1000  # nvmlDeviceGetPcieThroughput reports KB/s


class _Device:
    """What the reader keeps per device between readings."""

    def __init__(self, index: int, handle: Any):
        self.index = index
        self.handle = handle
        self.last_sample_us = 0  # newest driver utilization sample seen
        self.gpm: GpmDevice | None = None


class GpuReader:
    """Opens NVML once; `read()` returns one GpuReading per device the job uses, never raising.

    `gpus` chooses the devices (samples.selection); None reads every GPU NVML lists. Reading only
    the job's GPUs keeps a tick short on a host of eight (a GPU without GPM pays 2 x 20 ms of PCIe
    counters per reading) and keeps other jobs' GPUs out of the verdict.
    """

    def __init__(self, lib: Any | None = None, *, clock_s: Callable[[], float] = time.monotonic,
                 gpus: GpuSelection | None = None):
        self._lib = lib
        self._clock_s = clock_s
        self._selection = gpus or GpuSelection.every()
        self.selection_text: str | None = None  # which GPUs are read and why, once opened
        self.selected_by = self._selection.source
        self._session: nvml.NvmlSession | None = None
        self._devices: list[_Device] = []
        self._never: set[str] = set()  # metrics NVML said it will never give
        self.devices: tuple[GpuDevice, ...] = ()
        self.driver_version: str | None = None
        self.cuda_driver_version: str | None = None  # the newest CUDA the driver supports, "12.8"
        self.compute_capabilities: dict[int, str] = {}  # device index -> "9.0", where NVML says
        self.device_reasons: dict[str, str] = {}  # why cuda_driver_version or a compute capability is missing
        self.unavailable_reason: str | None = "NVML was not opened"
        self.metric_reasons: dict[str, str] = {}
        self.metrics: dict[str, str] = {}
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
        cuda = session.query("nvmlSystemGetCudaDriverVersion")
        if nvml.is_available(cuda):  # NVML encodes 12.8 as 12080
            self.cuda_driver_version = f"{int(cuda) // 1000}.{int(cuda) % 1000 // 10}"
        else:
            self.device_reasons.setdefault("cuda_driver_version", cuda.reason)
        handles: dict[int, tuple[Any, str | None]] = {}
        for index in range(session.query("nvmlDeviceGetCount")):
            handle = session.query("nvmlDeviceGetHandleByIndex", index)
            if not nvml.is_available(handle):
                self.metric_reasons.setdefault("device", handle.reason)
                continue
            uuid = session.query("nvmlDeviceGetUUID", handle)
            handles[index] = (handle, nvml.to_text(uuid) if nvml.is_available(uuid) else None)
        chosen, unmatched = self._selection.resolve([(i, u) for i, (_, u) in handles.items()])
        if unmatched:
            self.metric_reasons.setdefault("device", unmatched)
        self.selection_text = self._selection.describe(chosen) + (f"; {unmatched}" if unmatched else "")
        if not chosen:
            self.unavailable_reason = (unmatched or f"{self._selection.source} names no GPU") + \
                ": the job uses no GPU that NVML can read"
            self._session = None
            session.close()
            return self
        self._open_devices([(i, *handles[i]) for i in chosen])
        return self

    def _open_devices(self, chosen: list[tuple[int, Any, str | None]]) -> None:
        session = self._session
        devices = []
        for index, handle, uuid in chosen:
            device = _Device(index, handle)
            self._devices.append(device)
            name = session.query("nvmlDeviceGetName", handle)
            memory = session.query("nvmlDeviceGetMemoryInfo", handle)
            devices.append(
                GpuDevice(
                    index=index,
                    name=nvml.to_text(name) if nvml.is_available(name) else "unknown GPU",
                    memory_total_bytes=int(memory.total) if nvml.is_available(memory) else None,
                    uuid=uuid,
                )
            )
            capability = session.query("nvmlDeviceGetCudaComputeCapability", handle)
            if nvml.is_available(capability):
                self.compute_capabilities[index] = f"{capability[0]}.{capability[1]}"
            else:
                self.device_reasons.setdefault("compute_capability", capability.reason)
            self._prime_util_samples(device)
            self._open_gpm(device)
        self.devices = tuple(devices)

    @property
    def available(self) -> bool:
        return self._session is not None

    @property
    def gpm_available(self) -> bool:
        return any(d.gpm is not None for d in self._devices)

    def read(self) -> tuple[GpuReading, ...]:
        if self._session is None:
            return ()
        return tuple(self._read_one(device) for device in self._devices)

    # -- one metric at a time -----------------------------------------------------------------
    def _query(self, metric: str, fn_name: str, *args: Any) -> Any:
        if metric in self._never:
            return nvml.NotAvailable(self.metric_reasons.get(metric, "not supported"), "NVMLError_NotSupported")
        value = self._session.query(fn_name, *args)
        if not nvml.is_available(value) and value.permanent:
            self._give_up(metric, value.reason)
        return value

    def _give_up(self, metric: str, reason: str) -> None:
        self._never.add(metric)
        self.metric_reasons.setdefault(metric, reason)

    def _value(self, metric: str, value: Any, convert: Callable[[Any], Any], source: str) -> Any:
        if nvml.is_available(value):
            self.metrics.setdefault(metric, source)
            return convert(value)
        self.metric_reasons.setdefault(metric, value.reason)
        return None

    # -- the driver's utilization sample buffer -----------------------------------------------
    def _prime_util_samples(self, device: _Device) -> None:
        """Skip what the buffer held before pipediag started: only newer samples count."""
        kind = getattr(self._session.lib, "NVML_GPU_UTILIZATION_SAMPLES", 1)
        got = self._query("util_samples_pct", "nvmlDeviceGetSamples", device.handle, kind, 0)
        if nvml.is_available(got):
            device.last_sample_us = max((s.timeStamp for s in got[1]), default=0)

    def _util_samples(self, device: _Device) -> tuple[float, ...] | None:
        if "util_samples_pct" in self._never:
            return None
        kind = getattr(self._session.lib, "NVML_GPU_UTILIZATION_SAMPLES", 1)
        got = self._query("util_samples_pct", "nvmlDeviceGetSamples", device.handle, kind, device.last_sample_us)
        if not nvml.is_available(got):
            if got.kind == "NVMLError_NotFound":  # nothing newer since the last reading
                return ()
            self.metric_reasons.setdefault("util_samples_pct", got.reason)
            return None
        value_type, samples = got
        fresh = sorted((s for s in samples if s.timeStamp > device.last_sample_us), key=lambda s: s.timeStamp)
        if not fresh:
            return ()
        values = tuple(nvml.sample_value(value_type, s) for s in fresh)
        if any(not 0.0 <= v <= 100.0 for v in values):
            self._give_up("util_samples_pct", f"nvmlDeviceGetSamples gave utilization values outside 0-100 "
                          f"({max(values):g}): not percentages on this driver, so they are not used")
            return None
        device.last_sample_us = fresh[-1].timeStamp
        self.metrics.setdefault("util_samples_pct", "nvmlDeviceGetSamples (the driver's utilization samples)")
        return values

    # -- this process's memory ----------------------------------------------------------------
    def _process_memory(self, device: _Device) -> int | None:
        procs = self._query("process_memory_bytes", "nvmlDeviceGetComputeRunningProcesses", device.handle)
        if not nvml.is_available(procs):
            self.metric_reasons.setdefault("process_memory_bytes", procs.reason)
            return None
        pid = os.getpid()
        mine = [p for p in procs if getattr(p, "pid", None) == pid]
        if not mine:
            seen = ", ".join(str(getattr(p, "pid", "?")) for p in procs[:5]) or "none"
            self.metric_reasons.setdefault(
                "process_memory_bytes",
                f"this process (pid {pid}) is not in NVML's compute process list (pids: {seen}); before the first "
                "GPU work, or in a container whose pids NVML does not see",
            )
            return None
        used = [getattr(p, "usedGpuMemory", None) for p in mine]
        if any(u is None for u in used):
            self.metric_reasons.setdefault("process_memory_bytes", "NVML does not report per-process memory here")
            return None
        self.metrics.setdefault("process_memory_bytes", "nvmlDeviceGetComputeRunningProcesses")
        return int(sum(used))

    # -- GPM ------------------------------------------------------------------------------------
    def _open_gpm(self, device: _Device) -> None:
        gpm = GpmDevice(self._session, device.handle, self._clock_s)
        problem = gpm.open()
        if problem is None:
            device.gpm = gpm
            return
        for name in _GPM_FIELDS:
            self.metric_reasons.setdefault(name, problem.reason)

    def _gpm(self, device: _Device) -> dict[str, Any]:
        if device.gpm is None:
            return {}
        values = device.gpm.read()
        if values is None:  # too soon after the previous GPM sample: no reading this time
            return {}
        if not nvml.is_available(values):
            for name in _GPM_FIELDS:
                self.metric_reasons.setdefault(name, values.reason)
            return {}
        out = {}
        for name, value in values.items():
            if nvml.is_available(value):
                out[name] = value
                if name in _GPM_FIELDS:
                    self.metrics.setdefault(name, "GPM (nvmlGpmMetricsGet)")
            else:
                self.metric_reasons.setdefault(name, value.reason)
        return out

    def _pcie(self, device: _Device, gpm: dict[str, Any]) -> tuple[float | None, float | None]:
        if "pcie_tx_mib_per_s" in gpm and "pcie_rx_mib_per_s" in gpm:
            self.metrics.setdefault("pcie_tx_bytes_per_s", "GPM (nvmlGpmMetricsGet)")
            self.metrics.setdefault("pcie_rx_bytes_per_s", "GPM (nvmlGpmMetricsGet)")
            return gpm["pcie_tx_mib_per_s"] * _MIB, gpm["pcie_rx_mib_per_s"] * _MIB
        if device.gpm is not None:
            # GPM has PCIe on Hopper; a skipped GPM reading is no reason to spend 20 ms per counter.
            return None, None
        lib = self._session.lib
        # nvmlDeviceGetPcieThroughput counts bytes over a 20 ms window: cheap enough at 10 Hz.
        tx = self._query("pcie_tx_bytes_per_s", "nvmlDeviceGetPcieThroughput", device.handle,
                         getattr(lib, "NVML_PCIE_UTIL_TX_BYTES", 0))
        rx = self._query("pcie_rx_bytes_per_s", "nvmlDeviceGetPcieThroughput", device.handle,
                         getattr(lib, "NVML_PCIE_UTIL_RX_BYTES", 1))
        source = "nvmlDeviceGetPcieThroughput"
        return (self._value("pcie_tx_bytes_per_s", tx, lambda kb: kb * _KB, source),
                self._value("pcie_rx_bytes_per_s", rx, lambda kb: kb * _KB, source))

    # -- everything, for one device ---------------------------------------------------------------
    def _read_one(self, device: _Device) -> GpuReading:
        handle = device.handle
        lib = self._session.lib
        util = self._query("util_pct", "nvmlDeviceGetUtilizationRates", handle)
        memory = self._query("memory_used_bytes", "nvmlDeviceGetMemoryInfo", handle)
        power = self._query("power_w", "nvmlDeviceGetPowerUsage", handle)
        sm_clock = self._query("sm_clock_mhz", "nvmlDeviceGetClockInfo", handle, getattr(lib, "NVML_CLOCK_SM", 1))
        mem_clock = self._query("mem_clock_mhz", "nvmlDeviceGetClockInfo", handle, getattr(lib, "NVML_CLOCK_MEM", 2))
        gpm = self._gpm(device)
        tx, rx = self._pcie(device, gpm)
        return GpuReading(
            index=device.index,
            util_pct=self._value("util_pct", util, lambda u: float(u.gpu), "nvmlDeviceGetUtilizationRates"),
            memory_used_bytes=self._value("memory_used_bytes", memory, lambda m: int(m.used), "nvmlDeviceGetMemoryInfo"),
            memory_total_bytes=self._value("memory_total_bytes", memory, lambda m: int(m.total),
                                           "nvmlDeviceGetMemoryInfo"),
            power_w=self._value("power_w", power, lambda mw: mw / 1000.0, "nvmlDeviceGetPowerUsage"),
            sm_clock_mhz=self._value("sm_clock_mhz", sm_clock, float, "nvmlDeviceGetClockInfo"),
            mem_clock_mhz=self._value("mem_clock_mhz", mem_clock, float, "nvmlDeviceGetClockInfo"),
            util_samples_pct=self._util_samples(device),
            pcie_tx_bytes_per_s=tx,
            pcie_rx_bytes_per_s=rx,
            process_memory_bytes=self._process_memory(device),
            **{name: gpm.get(name) for name in _GPM_FIELDS},
        )

    def close(self) -> None:
        for device in self._devices:
            if device.gpm is not None:
                device.gpm.close()
                device.gpm = None
        if self._session is not None:
            self._session.close()
            self._session = None
