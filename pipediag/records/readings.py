"""What one sample holds. Plain frozen dataclasses: no psutil, no NVML.

A GPU field that could not be read is None; why is kept once per metric in `SampleLog`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pipediag.records.container import ContainerLimits, ThrottleCounters


@dataclass(frozen=True, slots=True)
class CpuReading:
    total_pct: float  # all cores together: 100 = every core busy
    per_core_pct: tuple[float, ...]
    process_pct: float  # this process: 100 = one core busy (psutil's convention)
    iowait_pct: float | None  # None where the OS has no iowait (macOS, Windows)
    rss_bytes: int
    available_bytes: int
    total_bytes: int


@dataclass(frozen=True, slots=True)
class GpuReading:
    index: int
    util_pct: float | None  # NVML: a kernel ran during the sample period, not how much of the chip
    memory_used_bytes: int | None  # the whole device, every process
    memory_total_bytes: int | None
    power_w: float | None
    sm_clock_mhz: float | None
    mem_clock_mhz: float | None = None
    # The driver's own utilization samples (nvmlDeviceGetSamples) newer than the previous
    # reading: () when none arrived since, None when the driver keeps no such buffer.
    util_samples_pct: tuple[float, ...] | None = None
    pcie_tx_bytes_per_s: float | None = None  # from GPM when it has it, else nvmlDeviceGetPcieThroughput
    pcie_rx_bytes_per_s: float | None = None
    process_memory_bytes: int | None = None  # this process's GPU memory (NVML's process list)
    # GPM (Hopper and newer), each the average over the time since the previous GPM sample.
    gpm_sm_active_pct: float | None = None  # share of SMs with work resident ("SM activity")
    gpm_sm_occupancy_pct: float | None = None  # resident warps / the SMs' maximum
    gpm_tensor_active_pct: float | None = None  # any tensor-core pipe active
    gpm_dram_bw_pct: float | None = None  # DRAM bandwidth used / peak
    gpm_fp32_active_pct: float | None = None  # non-tensor FP32 pipe
    gpm_fp16_active_pct: float | None = None  # non-tensor FP16 pipe


@dataclass(frozen=True, slots=True)
class Sample:
    time_ns: int  # on the sampler's clock (time.monotonic_ns unless injected)
    cpu: CpuReading
    gpus: tuple[GpuReading, ...] = ()
    throttle: ThrottleCounters | None = None  # the CPU quota's cpu.stat counters; None: no quota, or unread


@dataclass(frozen=True)
class GpuDevice:
    index: int  # NVML's index (PCI bus order)
    name: str
    memory_total_bytes: int | None
    uuid: str | None = None  # "GPU-…", stable across reboots and index orders; None when NVML gave none


@dataclass(frozen=True)
class SampleLog:
    """Everything the sampler saw, plus why GPU data is missing where it is."""

    interval_s: float
    samples: tuple[Sample, ...]
    gpu_devices: tuple[GpuDevice, ...] = ()
    gpu_unavailable_reason: str | None = None  # set when there is no GPU data at all
    gpu_metric_reasons: dict[str, str] = field(default_factory=dict)  # metric -> why it is None
    dropped_samples: int = 0  # the oldest samples beyond the bounded buffer
    gpu_metrics: dict[str, str] = field(default_factory=dict)  # metric -> its source, when it gave readings
    gpu_selection: str | None = None  # which GPUs were sampled and why, e.g. "GPUs 0, 1 (CUDA_VISIBLE_DEVICES)"
    gpu_selected_by: str | None = None  # --gpus | CUDA_VISIBLE_DEVICES | every GPU NVML lists (samples.selection)
    container: ContainerLimits | None = None  # this process's CPU and memory limits, read when sampling began

    def between(self, start_ns: int, end_ns: int) -> tuple[Sample, ...]:
        return tuple(s for s in self.samples if start_ns <= s.time_ns <= end_ns)

    def to_dict(self) -> dict[str, Any]:
        return {
            "interval_s": self.interval_s,
            "gpu_devices": [asdict(d) for d in self.gpu_devices],
            "gpu_unavailable_reason": self.gpu_unavailable_reason,
            "gpu_metric_reasons": dict(self.gpu_metric_reasons),
            "gpu_metrics": dict(self.gpu_metrics),
            "dropped_samples": self.dropped_samples,
            "gpu_selection": self.gpu_selection,
            "gpu_selected_by": self.gpu_selected_by,
            "container": None if self.container is None else self.container.to_dict(),
            "samples": [_sample_to_dict(s) for s in self.samples],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleLog:
        return cls(
            interval_s=data["interval_s"],
            samples=tuple(_sample_from_dict(s) for s in data["samples"]),
            gpu_devices=tuple(GpuDevice(**d) for d in data.get("gpu_devices", [])),
            gpu_unavailable_reason=data.get("gpu_unavailable_reason"),
            gpu_metric_reasons=dict(data.get("gpu_metric_reasons", {})),
            dropped_samples=data.get("dropped_samples", 0),
            gpu_metrics=dict(data.get("gpu_metrics", {})),
            gpu_selection=data.get("gpu_selection"),
            gpu_selected_by=data.get("gpu_selected_by"),
            container=None if data.get("container") is None else ContainerLimits.from_dict(data["container"]),
        )


def _sample_to_dict(sample: Sample) -> dict[str, Any]:
    cpu = asdict(sample.cpu)
    cpu["per_core_pct"] = list(sample.cpu.per_core_pct)
    return {"time_ns": sample.time_ns, "cpu": cpu, "gpus": [asdict(g) for g in sample.gpus],
            "throttle": None if sample.throttle is None else asdict(sample.throttle)}


def _sample_from_dict(data: dict[str, Any]) -> Sample:
    cpu = dict(data["cpu"])
    cpu["per_core_pct"] = tuple(cpu["per_core_pct"])
    return Sample(
        time_ns=data["time_ns"],
        cpu=CpuReading(**cpu),
        gpus=tuple(_gpu_from_dict(g) for g in data.get("gpus", [])),
        throttle=None if data.get("throttle") is None else ThrottleCounters(**data["throttle"]),
    )


def _gpu_from_dict(data: dict[str, Any]) -> GpuReading:
    data = dict(data)
    if data.get("util_samples_pct") is not None:
        data["util_samples_pct"] = tuple(data["util_samples_pct"])
    return GpuReading(**data)
