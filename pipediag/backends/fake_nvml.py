"""A scripted NVML for machines without an NVIDIA GPU: tests, `--demo`, and users' own tests.

It implements the subset of the pynvml API that pipediag calls, with the same names, return
shapes and error class. Each metric of a `FakeGpu` is a script:

- a number: the same reading every time;
- a sequence: one reading per call, the last one repeated;
- a callable `f(elapsed_s) -> number`, given seconds since `nvmlInit` on the injected clock;
- `None`: the metric raises `NVMLError_NotSupported`, as on GPUs that lack it.

    fake = FakeNvml([FakeGpu(util_pct=[0, 0, 95, 97])])
    sampler = Sampler(gpu_reader=GpuReader(fake))

Besides the basic readings it scripts what the GPU side of pipediag reads on a Hopper GPU:
- what `pipediag env` checks: the CUDA version the driver supports
  (`nvmlSystemGetCudaDriverVersion`) and each GPU's compute capability;
- the driver's utilization sample buffer (`nvmlDeviceGetSamples`): one sample every
  `util_sample_period_s` since `nvmlInit`, valued by the `util_pct` script at that time (or by
  its own `util_samples_pct` script), `NVMLError_NotFound` when nothing is newer than asked;
- PCIe throughput (KB/s, as NVML reports it), the memory clock, this process's GPU memory
  (`nvmlDeviceGetComputeRunningProcesses`, with the caller's pid unless `process_pid` says
  otherwise, as in a container whose pids NVML does not see);
- GPM (`nvmlGpmQueryDeviceSupport`, sample alloc/get/free, `c_nvmlGpmMetricsGet_t`,
  `nvmlGpmMetricsGet`): each metric is a script read at the second sample's time; a `None`
  script makes that metric's slot return NOT_SUPPORTED; `gpm_supported=False` is a GPU without
  GPM (pre-Hopper), `gpm_supported=None` a driver too old to know the call.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

Script = float | int | Sequence[float] | Callable[[float], float] | None

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
NVML_GPU_UTILIZATION_SAMPLES = 1
NVML_VALUE_TYPE_UNSIGNED_INT = 1
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
NVML_GPM_METRICS_GET_VERSION = 1
NVML_GPM_METRIC_SM_UTIL = 2
NVML_GPM_METRIC_SM_OCCUPANCY = 3
NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5
NVML_GPM_METRIC_DRAM_BW_UTIL = 10
NVML_GPM_METRIC_FP32_UTIL = 12
NVML_GPM_METRIC_FP16_UTIL = 13
NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20
NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21
NVML_GPM_METRIC_MAX = 477

# GPM metric id -> the FakeGpu script that answers it.
_GPM_SCRIPTS = {
    NVML_GPM_METRIC_SM_UTIL: "gpm_sm_active_pct",
    NVML_GPM_METRIC_SM_OCCUPANCY: "gpm_sm_occupancy_pct",
    NVML_GPM_METRIC_ANY_TENSOR_UTIL: "gpm_tensor_active_pct",
    NVML_GPM_METRIC_DRAM_BW_UTIL: "gpm_dram_bw_pct",
    NVML_GPM_METRIC_FP32_UTIL: "gpm_fp32_active_pct",
    NVML_GPM_METRIC_FP16_UTIL: "gpm_fp16_active_pct",
    NVML_GPM_METRIC_PCIE_TX_PER_SEC: "gpm_pcie_tx_mib_per_s",
    NVML_GPM_METRIC_PCIE_RX_PER_SEC: "gpm_pcie_rx_mib_per_s",
}
_WALL_START_S = 1_790_000_000.0  # driver timestamps are CPU time in microseconds
_DRIVER_BUFFER = 120  # samples the driver keeps per type


class NVMLError(Exception):
    """Same role as pynvml.NVMLError: the base of every NVML failure."""


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's name
    def __init__(self) -> None:
        super().__init__("Not Supported")


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801 - pynvml's name
    def __init__(self) -> None:
        super().__init__("NVML Shared Library Not Found")


class NVMLError_Uninitialized(NVMLError):  # noqa: N801 - pynvml's name
    def __init__(self) -> None:
        super().__init__("Uninitialized")


class NVMLError_NotFound(NVMLError):  # noqa: N801 - pynvml's name
    def __init__(self) -> None:
        super().__init__("Not Found")


class NVMLError_InvalidArgument(NVMLError):  # noqa: N801 - pynvml's name
    def __init__(self) -> None:
        super().__init__("Invalid Argument")


class NVMLError_GpuIsLost(NVMLError):  # noqa: N801 - pynvml's name
    def __init__(self) -> None:
        super().__init__("GPU is lost")


@dataclass
class FakeGpu:
    """One scripted GPU. Defaults describe an idle H200 with GPM."""

    name: str = "NVIDIA H200 (fake)"
    uuid: str | None = None  # None: "GPU-fake0000-…-<index>"; NVML's UUID of the device
    memory_total_bytes: int = 143_771_090_944
    util_pct: Script = 0.0
    memory_used_bytes: Script = 500 * 2**20
    power_w: Script = 75.0
    sm_clock_mhz: Script = 1980.0
    mem_clock_mhz: Script = 3201.0
    pcie_tx_kb_per_s: Script = 1000.0  # NVML's unit: KB/s
    pcie_rx_kb_per_s: Script = 1000.0
    process_memory_bytes: Script = 0  # this process's used GPU memory
    process_pid: int | None = None  # the pid NVML reports for it; None: the caller's own pid
    other_processes: tuple[tuple[int, int], ...] = ()  # (pid, bytes) of other processes
    util_samples: bool = True  # does the driver keep a utilization sample buffer
    util_samples_pct: Script = None  # the buffer's values; None: follow util_pct
    util_sample_period_s: float = 1 / 6
    gpm_supported: bool | None = True  # None: the driver does not know the GPM calls
    gpm_sm_active_pct: Script = 0.0
    gpm_sm_occupancy_pct: Script = 0.0
    gpm_tensor_active_pct: Script = 0.0
    gpm_dram_bw_pct: Script = 0.0
    gpm_fp32_active_pct: Script = 0.0
    gpm_fp16_active_pct: Script = 0.0
    gpm_pcie_tx_mib_per_s: Script = 1.0
    gpm_pcie_rx_mib_per_s: Script = 1.0
    compute_capability: tuple[int, int] | None = (9, 0)  # None: the driver does not say
    _calls: dict[str, int] = field(default_factory=dict, repr=False)


class FakeGpmSample:
    """An opaque GPM sample buffer: remembers when and on which GPU it was taken."""

    def __init__(self) -> None:
        self.gpu: FakeGpu | None = None
        self.time_s: float | None = None
        self.freed = False


class _FakeGpmMetric:
    def __init__(self) -> None:
        self.metricId = 0
        self.nvmlReturn = NVML_SUCCESS
        self.value = 0.0


class c_nvmlGpmMetricsGet_t:  # noqa: N801 - pynvml's name
    """pynvml's request struct: version, numMetrics, sample1, sample2, metrics[]."""

    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1: FakeGpmSample | None = None
        self.sample2: FakeGpmSample | None = None
        self.metrics = [_FakeGpmMetric() for _ in range(len(_GPM_SCRIPTS) + 8)]


class FakeNvml:
    """A module-like object with pynvml's functions. Pass it wherever pipediag takes an NVML lib."""

    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_NotFound = NVMLError_NotFound
    NVMLError_GpuIsLost = NVMLError_GpuIsLost
    NVML_SUCCESS = NVML_SUCCESS
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_CLOCK_MEM = NVML_CLOCK_MEM
    NVML_GPU_UTILIZATION_SAMPLES = NVML_GPU_UTILIZATION_SAMPLES
    NVML_PCIE_UTIL_TX_BYTES = NVML_PCIE_UTIL_TX_BYTES
    NVML_PCIE_UTIL_RX_BYTES = NVML_PCIE_UTIL_RX_BYTES
    NVML_GPM_METRICS_GET_VERSION = NVML_GPM_METRICS_GET_VERSION
    NVML_GPM_METRIC_SM_UTIL = NVML_GPM_METRIC_SM_UTIL
    NVML_GPM_METRIC_SM_OCCUPANCY = NVML_GPM_METRIC_SM_OCCUPANCY
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = NVML_GPM_METRIC_ANY_TENSOR_UTIL
    NVML_GPM_METRIC_DRAM_BW_UTIL = NVML_GPM_METRIC_DRAM_BW_UTIL
    NVML_GPM_METRIC_FP32_UTIL = NVML_GPM_METRIC_FP32_UTIL
    NVML_GPM_METRIC_FP16_UTIL = NVML_GPM_METRIC_FP16_UTIL
    NVML_GPM_METRIC_PCIE_TX_PER_SEC = NVML_GPM_METRIC_PCIE_TX_PER_SEC
    NVML_GPM_METRIC_PCIE_RX_PER_SEC = NVML_GPM_METRIC_PCIE_RX_PER_SEC
    c_nvmlGpmMetricsGet_t = c_nvmlGpmMetricsGet_t  # noqa: N815 (pynvml's own name)

    def __init__(
        self,
        gpus: Sequence[FakeGpu] = (),
        *,
        driver_version: str = "999.99 (fake)",
        cuda_driver_version: int | None = 12080,  # NVML's encoding: 1000 * major + 10 * minor
        library_missing: bool = False,
        clock_s: Callable[[], float] = time.monotonic,
        lost_after_s: float | None = None,
    ):
        self.gpus = list(gpus)
        self.driver_version = driver_version
        self.cuda_driver_version = cuda_driver_version
        self.library_missing = library_missing
        self.clock_s = clock_s
        self.lost_after_s = lost_after_s  # after this many seconds every device call raises GpuIsLost
        self._start_s: float | None = None
        self.init_count = 0
        self.shutdown_count = 0
        self.gpm_allocated = 0
        self.gpm_freed = 0
        self.calls: dict[str, int] = {}  # NVML function name -> times called

    # -- library lifetime -------------------------------------------------------------------
    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's name
        if self.library_missing:
            raise NVMLError_LibraryNotFound()
        self._start_s = self.clock_s()
        self.init_count += 1

    def nvmlShutdown(self) -> None:  # noqa: N802
        self._require_init()
        self.shutdown_count += 1

    def nvmlSystemGetDriverVersion(self) -> str:  # noqa: N802
        self._require_init()
        return self.driver_version

    def nvmlSystemGetCudaDriverVersion(self) -> int:  # noqa: N802
        self._require_init()
        if self.cuda_driver_version is None:
            raise NVMLError_NotSupported()
        return self.cuda_driver_version

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        self._require_init()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:  # noqa: N802
        self._require_init()
        if not 0 <= index < len(self.gpus):
            raise NVMLError("Invalid Argument")
        return self.gpus[index]

    # -- per-device readings ----------------------------------------------------------------
    def nvmlDeviceGetName(self, gpu: FakeGpu) -> str:  # noqa: N802
        return gpu.name

    def nvmlDeviceGetCudaComputeCapability(self, gpu: FakeGpu) -> tuple[int, int]:  # noqa: N802
        self._require_init()
        if gpu.compute_capability is None:
            raise NVMLError_NotSupported()
        return gpu.compute_capability

    def nvmlDeviceGetUtilizationRates(self, gpu: FakeGpu) -> SimpleNamespace:  # noqa: N802
        return SimpleNamespace(gpu=int(self._read(gpu, "util_pct")), memory=0)

    def nvmlDeviceGetUUID(self, gpu: FakeGpu) -> str:  # noqa: N802
        self._require_init()
        if gpu.uuid is not None:
            return gpu.uuid
        index = next(i for i, g in enumerate(self.gpus) if g is gpu)  # identity: equal scripts are distinct GPUs
        return f"GPU-fake0000-0000-0000-0000-{index:012d}"

    def nvmlDeviceGetMemoryInfo(self, gpu: FakeGpu) -> SimpleNamespace:  # noqa: N802
        used = int(self._read(gpu, "memory_used_bytes"))
        return SimpleNamespace(total=gpu.memory_total_bytes, used=used, free=gpu.memory_total_bytes - used)

    def nvmlDeviceGetPowerUsage(self, gpu: FakeGpu) -> int:  # noqa: N802
        return int(self._read(gpu, "power_w") * 1000)  # NVML reports milliwatts

    def nvmlDeviceGetClockInfo(self, gpu: FakeGpu, clock_type: int) -> int:  # noqa: N802
        if clock_type == NVML_CLOCK_SM:
            return int(self._read(gpu, "sm_clock_mhz"))
        if clock_type == NVML_CLOCK_MEM:
            return int(self._read(gpu, "mem_clock_mhz"))
        raise NVMLError_NotSupported()

    def nvmlDeviceGetPcieThroughput(self, gpu: FakeGpu, counter: int) -> int:  # noqa: N802
        self._count("nvmlDeviceGetPcieThroughput")
        metric = "pcie_tx_kb_per_s" if counter == NVML_PCIE_UTIL_TX_BYTES else "pcie_rx_kb_per_s"
        return int(self._read(gpu, metric))

    def nvmlDeviceGetComputeRunningProcesses(self, gpu: FakeGpu) -> list[SimpleNamespace]:  # noqa: N802
        self._count("nvmlDeviceGetComputeRunningProcesses")
        used = self._read(gpu, "process_memory_bytes")
        pid = os.getpid() if gpu.process_pid is None else gpu.process_pid
        procs = [SimpleNamespace(pid=pid, usedGpuMemory=int(used))]
        procs += [SimpleNamespace(pid=p, usedGpuMemory=b) for p, b in gpu.other_processes]
        return procs

    def nvmlDeviceGetSamples(self, gpu: FakeGpu, sampling_type: int, last_seen_us: int):  # noqa: N802
        """The driver's ring buffer of utilization samples newer than `last_seen_us`."""
        self._count("nvmlDeviceGetSamples")
        self._require_init()
        if sampling_type != NVML_GPU_UTILIZATION_SAMPLES or not gpu.util_samples or gpu.util_pct is None:
            raise NVMLError_NotSupported()
        elapsed = self.clock_s() - self._start_s
        newest = int(elapsed / gpu.util_sample_period_s + 1e-9)
        out = []
        for k in range(max(1, newest - _DRIVER_BUFFER + 1), newest + 1):
            t = k * gpu.util_sample_period_s
            stamp = int(round((_WALL_START_S + t) * 1e6))
            if stamp > last_seen_us:
                value = self._driver_sample(gpu, k, t)
                out.append(SimpleNamespace(timeStamp=stamp, sampleValue=SimpleNamespace(uiVal=int(round(value)))))
        if not out:
            raise NVMLError_NotFound()
        return NVML_VALUE_TYPE_UNSIGNED_INT, out

    # -- GPM (Hopper and newer) -------------------------------------------------------------
    def nvmlGpmQueryDeviceSupport(self, gpu: FakeGpu) -> SimpleNamespace:  # noqa: N802
        self._require_init()
        if gpu.gpm_supported is None:
            raise NVMLError_NotSupported()
        return SimpleNamespace(version=1, isSupportedDevice=1 if gpu.gpm_supported else 0)

    def nvmlGpmSampleAlloc(self) -> FakeGpmSample:  # noqa: N802
        self._require_init()
        self.gpm_allocated += 1
        return FakeGpmSample()

    def nvmlGpmSampleFree(self, sample: FakeGpmSample) -> None:  # noqa: N802
        if sample.freed:
            raise NVMLError_InvalidArgument()
        sample.freed = True
        self.gpm_freed += 1

    def nvmlGpmSampleGet(self, gpu: FakeGpu, sample: FakeGpmSample) -> FakeGpmSample:  # noqa: N802
        self._count("nvmlGpmSampleGet")
        self._require_init()
        if not gpu.gpm_supported:
            raise NVMLError_NotSupported()
        if sample.freed:
            raise NVMLError_InvalidArgument()
        sample.gpu, sample.time_s = gpu, self.clock_s() - self._start_s
        return sample

    def nvmlGpmMetricsGet(self, request: c_nvmlGpmMetricsGet_t) -> c_nvmlGpmMetricsGet_t:  # noqa: N802
        self._count("nvmlGpmMetricsGet")
        s1, s2 = request.sample1, request.sample2
        if request.version != NVML_GPM_METRICS_GET_VERSION or s1 is None or s2 is None:
            raise NVMLError_InvalidArgument()
        if s1.gpu is None or s1.gpu is not s2.gpu or s2.time_s <= s1.time_s:
            raise NVMLError_InvalidArgument()
        for slot in request.metrics[: request.numMetrics]:
            name = _GPM_SCRIPTS.get(slot.metricId)
            script = None if name is None else getattr(s2.gpu, name)
            if script is None:
                slot.nvmlReturn, slot.value = NVML_ERROR_NOT_SUPPORTED, 0.0
            else:
                slot.nvmlReturn, slot.value = NVML_SUCCESS, self._evaluate(s2.gpu, name, script, s2.time_s)
        return request

    # -- scripting --------------------------------------------------------------------------
    def _require_init(self) -> None:
        if self._start_s is None:
            raise NVMLError_Uninitialized()
        if self.lost_after_s is not None and self.clock_s() - self._start_s > self.lost_after_s:
            raise NVMLError_GpuIsLost()  # the driver failing mid-run (Xid 79: fallen off the bus)

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def _read(self, gpu: FakeGpu, metric: str) -> float:
        self._require_init()
        script = getattr(gpu, metric)
        if script is None:
            raise NVMLError_NotSupported()
        return self._evaluate(gpu, metric, script, self.clock_s() - self._start_s)

    def _evaluate(self, gpu: FakeGpu, metric: str, script: Script, elapsed_s: float) -> float:
        if callable(script):
            return float(script(elapsed_s))
        if isinstance(script, (int, float)):
            return float(script)
        n = gpu._calls.get(metric, 0)
        gpu._calls[metric] = n + 1
        return float(script[min(n, len(script) - 1)])

    def _driver_sample(self, gpu: FakeGpu, k: int, t: float) -> float:
        """The k-th sample of the driver's buffer (k = 1, 2, ...), taken at t seconds."""
        script = gpu.util_samples_pct if gpu.util_samples_pct is not None else gpu.util_pct
        if callable(script):
            return float(script(t))
        if isinstance(script, (int, float)):
            return float(script)
        return float(script[min(k - 1, len(script) - 1)])
