"""A scripted NVML for machines without an NVIDIA GPU: tests, `--demo`, and users' own tests.

It implements the subset of the pynvml API that pipediag calls, with the same names, return
shapes and error class. Each metric of a `FakeGpu` is a script:

- a number: the same reading every time;
- a sequence: one reading per call, the last one repeated;
- a callable `f(elapsed_s) -> number`, given seconds since `nvmlInit` on the injected clock;
- `None`: the metric raises `NVMLError_NotSupported`, as on GPUs that lack it.

    fake = FakeNvml([FakeGpu(util_pct=[0, 0, 95, 97])])
    sampler = Sampler(gpu_reader=GpuReader(fake))
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Union

Script = Union[float, int, Sequence[float], Callable[[float], float], None]

NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0


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


@dataclass
class FakeGpu:
    """One scripted GPU. Defaults describe an idle H200."""

    name: str = "NVIDIA H200 (fake)"
    memory_total_bytes: int = 143_771_090_944
    util_pct: Script = 0.0
    memory_used_bytes: Script = 500 * 2**20
    power_w: Script = 75.0
    sm_clock_mhz: Script = 1980.0
    _calls: dict[str, int] = field(default_factory=dict, repr=False)


class FakeNvml:
    """A module-like object with pynvml's functions. Pass it wherever pipediag takes an NVML lib."""

    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_CLOCK_MEM = NVML_CLOCK_MEM

    def __init__(
        self,
        gpus: Sequence[FakeGpu] = (),
        *,
        driver_version: str = "999.99 (fake)",
        library_missing: bool = False,
        clock_s: Callable[[], float] = time.monotonic,
    ):
        self.gpus = list(gpus)
        self.driver_version = driver_version
        self.library_missing = library_missing
        self.clock_s = clock_s
        self._start_s: float | None = None
        self.init_count = 0
        self.shutdown_count = 0

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

    def nvmlDeviceGetUtilizationRates(self, gpu: FakeGpu) -> SimpleNamespace:  # noqa: N802
        return SimpleNamespace(gpu=int(self._read(gpu, "util_pct")), memory=0)

    def nvmlDeviceGetMemoryInfo(self, gpu: FakeGpu) -> SimpleNamespace:  # noqa: N802
        used = int(self._read(gpu, "memory_used_bytes"))
        return SimpleNamespace(total=gpu.memory_total_bytes, used=used, free=gpu.memory_total_bytes - used)

    def nvmlDeviceGetPowerUsage(self, gpu: FakeGpu) -> int:  # noqa: N802
        return int(self._read(gpu, "power_w") * 1000)  # NVML reports milliwatts

    def nvmlDeviceGetClockInfo(self, gpu: FakeGpu, clock_type: int) -> int:  # noqa: N802
        if clock_type != NVML_CLOCK_SM:
            raise NVMLError_NotSupported()
        return int(self._read(gpu, "sm_clock_mhz"))

    # -- scripting --------------------------------------------------------------------------
    def _require_init(self) -> None:
        if self._start_s is None:
            raise NVMLError_Uninitialized()

    def _read(self, gpu: FakeGpu, metric: str) -> float:
        self._require_init()
        script = getattr(gpu, metric)
        if script is None:
            raise NVMLError_NotSupported()
        if callable(script):
            return float(script(self.clock_s() - self._start_s))
        if isinstance(script, (int, float)):
            return float(script)
        n = gpu._calls.get(metric, 0)
        gpu._calls[metric] = n + 1
        return float(script[min(n, len(script) - 1)])
