"""CPU and GPU use over a set of time windows (e.g. every turn one side of a comparison took).

Pure numbers from a SampleLog. A sample's CPU reading covers the sampling interval that ends at
its timestamp, so only samples whose whole interval lies inside a window count for it: the
other side's turn does not leak into this side's numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipediag.samples.readings import Sample, SampleLog


@dataclass(frozen=True)
class Usage:
    samples: int
    cpu_util_pct: float | None  # all cores: 100 = every core busy
    process_cpu_pct: float | None  # 100 = one core
    gpu_util_pct: float | None  # GPU 0, NVML utilization
    gpu_util_reason: str | None  # why gpu_util_pct is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Usage:
        return cls(**d)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def samples_within(log: SampleLog, windows: Sequence[tuple[int, int]]) -> list[Sample]:
    interval_ns = int(log.interval_s * 1e9)
    out = []
    for start, end in windows:
        out.extend(log.between(start + interval_ns, end))
    return out


def usage(log: SampleLog, windows: Sequence[tuple[int, int]]) -> Usage:
    samples = samples_within(log, windows)
    gpu = [g.util_pct for s in samples for g in s.gpus[:1] if g.util_pct is not None]
    if log.gpu_unavailable_reason:
        reason = log.gpu_unavailable_reason
    elif not samples:
        reason = "no sample fell wholly inside this side's turns (turns shorter than the sampling interval?)"
    elif not gpu:
        reason = log.gpu_metric_reasons.get("util_pct") or "NVML gave no utilization"
    else:
        reason = None
    return Usage(
        samples=len(samples),
        cpu_util_pct=_mean([s.cpu.total_pct for s in samples]),
        process_cpu_pct=_mean([s.cpu.process_pct for s in samples]),
        gpu_util_pct=_mean(gpu),
        gpu_util_reason=reason,
    )
