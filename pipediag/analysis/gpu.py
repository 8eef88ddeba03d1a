"""The GPU over one mode's window, in plain numbers: how often a kernel ran (NVML), how much of
the chip worked (GPM), power, clocks, PCIe, and memory. And which metrics a run had at all.

Utilization comes from the driver's own sample buffer when it has one (`nvmlDeviceGetSamples`):
each of those samples falls in exactly one sampler tick, so a window's mean counts each driver
sample once. Otherwise it is the mean of `nvmlDeviceGetUtilizationRates`, whose every reading
looks back over the driver's last sample period (1/6 s to 1 s, depending on the GPU).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pipediag.records.readings import GpuReading, Sample, SampleLog
from pipediag.samples.selection import SOURCE_ALL, SOURCE_PROCESS
from pipediag.stats import batch_means_ci

UTIL_FROM_DRIVER_SAMPLES = "driver_samples"  # nvmlDeviceGetSamples
UTIL_FROM_RATES = "utilization_rates"  # nvmlDeviceGetUtilizationRates

# What each metric is, for the report's "GPU metrics" line, in the order it lists them.
METRIC_LABELS = {
    "util_pct": "utilization",
    "util_samples_pct": "utilization driver samples",
    "memory_used_bytes": "memory used/total",
    "power_w": "power",
    "sm_clock_mhz": "SM clock",
    "mem_clock_mhz": "memory clock",
    "pcie_tx_bytes_per_s": "PCIe TX",
    "pcie_rx_bytes_per_s": "PCIe RX",
    "process_memory_bytes": "this process's memory",
    "gpm_sm_active_pct": "GPM SM activity",
    "gpm_sm_occupancy_pct": "GPM SM occupancy",
    "gpm_tensor_active_pct": "GPM tensor activity",
    "gpm_dram_bw_pct": "GPM DRAM bandwidth",
    "gpm_fp32_active_pct": "GPM FP32 activity",
    "gpm_fp16_active_pct": "GPM FP16 activity",
}


@dataclass(frozen=True)
class Gpm:
    """GPM means over a mode's window; each None when that metric gave no reading."""

    sm_active_pct: float | None  # share of SMs with work resident
    sm_occupancy_pct: float | None
    tensor_active_pct: float | None
    dram_bw_pct: float | None  # of the peak DRAM bandwidth
    fp32_active_pct: float | None
    fp16_active_pct: float | None
    samples: int
    sm_active_pct_ci: tuple[float, float] | None = None  # 95%, batch means of the samples; None: too few

    @property
    def math_active_pct(self) -> float | None:
        """The busiest arithmetic pipe: tensor cores, FP32 or FP16 (None when none was read)."""
        pipes = [v for v in (self.tensor_active_pct, self.fp32_active_pct, self.fp16_active_pct) if v is not None]
        return max(pipes) if pipes else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GpuWindow:
    """One GPU over one mode's window."""

    util_pct: float | None
    util_source: str | None  # driver_samples | utilization_rates
    util_readings: int  # driver samples or rate readings the mean is made of
    power_w_mean: float | None
    sm_clock_mhz_mean: float | None
    mem_clock_mhz_mean: float | None
    pcie_tx_bytes_per_s_mean: float | None
    pcie_rx_bytes_per_s_mean: float | None
    process_memory_max_bytes: int | None
    gpm: Gpm | None
    gpm_reason: str | None  # why gpm is None
    util_pct_ci: tuple[float, float] | None = None  # 95%, batch means of the readings; None: too few
    index: int | None = None  # NVML's index of the GPU (None in reports saved before it was kept)
    uuid: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gpm"] = None if self.gpm is None else self.gpm.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GpuWindow:
        gpm = d.get("gpm")
        if gpm is not None:
            gpm = Gpm(**{**gpm, "sm_active_pct_ci": _tuple(gpm.get("sm_active_pct_ci"))})
        return cls(**{**d, "gpm": gpm, "util_pct_ci": _tuple(d.get("util_pct_ci"))})


def _tuple(value) -> tuple[float, float] | None:
    return None if value is None else (value[0], value[1])


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _readings(samples: tuple[Sample, ...], index: int | None) -> list[GpuReading]:
    if index is None:
        return [s.gpus[0] for s in samples if s.gpus]
    return [g for s in samples for g in s.gpus if g.index == index]


def _field(readings: list[GpuReading], name: str) -> list[float]:
    return [getattr(r, name) for r in readings if getattr(r, name) is not None]


def job_gpus(log: SampleLog) -> tuple[tuple[int, ...], str | None]:
    """The NVML indices of the GPUs the job used, in the order chosen, and a line saying which and why.

    When nothing chose them (no --gpus, no CUDA_VISIBLE_DEVICES: every GPU was read), the GPUs NVML
    lists this process on, at any sample: a shared host's other GPUs are other jobs'. A framework
    opens a context on each device it sets up (TensorFlow and JAX on every visible GPU, PyTorch on
    those it touches), so a GPU the job set up but gave no work stays, and is told as idle. When
    NVML never lists this process (a container whose pids it does not see), every GPU stays."""
    order = [d.index for d in log.gpu_devices] or sorted({g.index for s in log.samples for g in s.gpus})
    if log.gpu_selected_by != SOURCE_ALL or len(order) < 2:
        return tuple(order), log.gpu_selection
    mine = {g.index for s in log.samples for g in s.gpus if g.process_memory_bytes is not None}
    if not mine or mine >= set(order):
        return tuple(order), log.gpu_selection
    kept = tuple(i for i in order if i in mine)
    names = ", ".join(str(i) for i in kept)
    return kept, (f"GPU{'s' if len(kept) > 1 else ''} {names} ({SOURCE_PROCESS}, of the {len(order)} it lists; "
                  "no --gpus or CUDA_VISIBLE_DEVICES chose)")


def gpu_windows(samples: tuple[Sample, ...], log: SampleLog) -> tuple[GpuWindow, ...]:
    """Every GPU the job used over the window, in the order they were chosen; () without GPU data."""
    order, _ = job_gpus(log)
    seen = {g.index for s in samples for g in s.gpus}
    windows = (gpu_window(samples, log, index) for index in order if index in seen)
    return tuple(w for w in windows if w is not None)


def gpu_window(samples: tuple[Sample, ...], log: SampleLog, index: int | None = None) -> GpuWindow | None:
    """GPU `index` (None: the first GPU of each sample) over the window. None when there was no
    GPU data at all (no NVML, no GPU, or no sample in the window)."""
    readings = _readings(samples, index)
    if not readings:
        return None
    index = readings[0].index
    uuid = next((d.uuid for d in log.gpu_devices if d.index == index), None)
    driver = [v for r in readings if r.util_samples_pct for v in r.util_samples_pct]
    rates = _field(readings, "util_pct")
    if driver:
        util, source, count = _mean(driver), UTIL_FROM_DRIVER_SAMPLES, len(driver)
    elif rates:
        util, source, count = _mean(rates), UTIL_FROM_RATES, len(rates)
    else:
        util, source, count = None, None, 0
    # The spread of a window's mean, for readings near a verdict line (verdict.edges): batch means,
    # since consecutive readings are correlated.
    util_ci = batch_means_ci(driver or rates) if (driver or rates) else None
    gpm_names = ("gpm_sm_active_pct", "gpm_sm_occupancy_pct", "gpm_tensor_active_pct", "gpm_dram_bw_pct",
                 "gpm_fp32_active_pct", "gpm_fp16_active_pct")
    gpm_values = {name: _field(readings, name) for name in gpm_names}
    gpm_samples = max(len(v) for v in gpm_values.values())
    if gpm_samples:
        sm = gpm_values["gpm_sm_active_pct"]
        gpm = Gpm(*(_mean(gpm_values[name]) for name in gpm_names), samples=gpm_samples,
                  sm_active_pct_ci=batch_means_ci(sm) if sm else None)
        gpm_reason = None
    else:
        gpm = None
        gpm_reason = log.gpu_metric_reasons.get("gpm_sm_active_pct") or (
            "no GPM sample fell in this mode's window" if "gpm_sm_active_pct" in log.gpu_metrics else "GPM not read")
    process = _field(readings, "process_memory_bytes")
    return GpuWindow(
        util_pct=util,
        util_source=source,
        util_readings=count,
        power_w_mean=_mean(_field(readings, "power_w")),
        sm_clock_mhz_mean=_mean(_field(readings, "sm_clock_mhz")),
        mem_clock_mhz_mean=_mean(_field(readings, "mem_clock_mhz")),
        pcie_tx_bytes_per_s_mean=_mean(_field(readings, "pcie_tx_bytes_per_s")),
        pcie_rx_bytes_per_s_mean=_mean(_field(readings, "pcie_rx_bytes_per_s")),
        process_memory_max_bytes=int(max(process)) if process else None,
        gpm=gpm,
        gpm_reason=gpm_reason,
        util_pct_ci=util_ci,
        index=index,
        uuid=uuid,
    )


@dataclass(frozen=True)
class MetricsSeen:
    """Which GPU metrics a run had (with their source) and which it lacked (with why)."""

    available: dict[str, str]
    unavailable: dict[str, str]
    no_gpu_reason: str | None

    @property
    def gpm(self) -> bool:
        return "gpm_sm_active_pct" in self.available

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def metrics_seen(log: SampleLog) -> MetricsSeen:
    order = list(METRIC_LABELS)
    rank = {k: order.index(k) if k in order else len(order) for k in log.gpu_metrics}
    available = {k: log.gpu_metrics[k] for k in sorted(log.gpu_metrics, key=lambda k: (rank[k], k))}
    unavailable = {k: v for k, v in sorted(log.gpu_metric_reasons.items()) if k not in available}
    return MetricsSeen(available=available, unavailable=unavailable, no_gpu_reason=log.gpu_unavailable_reason)


@dataclass(frozen=True)
class PeakMemory:
    """The most device memory the step held in a mode, and where that number comes from."""

    bytes: int
    source: str  # e.g. "jax Device.memory_stats()", "NVML: this process"
    scope: str  # mode: its own peak | process: the process's peak so far | sampled: max of the samples
    limit_bytes: int | None  # what the framework may use on the device, when it says

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def peak_memory(framework: Any, window: GpuWindow | None, log: SampleLog) -> tuple[PeakMemory | None, str | None]:
    """The framework's own peak when it told one (`framework` is a FrameworkMemory), else the
    largest NVML reading of this process's memory in the window (which can miss short peaks
    between samples). Returns (peak, None) or (None, why)."""
    if framework is not None and framework.peak_bytes is not None:
        return PeakMemory(int(framework.peak_bytes), f"{framework.framework} {framework.api}", framework.scope,
                          framework.limit_bytes), None
    if window is not None and window.process_memory_max_bytes is not None:
        return PeakMemory(window.process_memory_max_bytes, "NVML: this process", "sampled", None), None
    if log.gpu_unavailable_reason:
        return None, f"no framework device memory stats, and no NVML ({log.gpu_unavailable_reason})"
    reason = log.gpu_metric_reasons.get("process_memory_bytes", "no NVML reading of this process in this mode")
    return None, f"no framework device memory stats (the step ran on the CPU, or its framework keeps none); {reason}"
