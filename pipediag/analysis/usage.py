"""CPU and GPU use over a set of time windows (e.g. every turn one side of a comparison took).

Pure numbers from a SampleLog. A sample's CPU reading covers the sampling interval that ends at
its timestamp, so only samples whose whole interval lies inside a window count for it: the
other side's turn does not leak into this side's numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipediag.records.container import Throttling, throttling
from pipediag.records.readings import Sample, SampleLog


@dataclass(frozen=True)
class Usage:
    samples: int
    cpu_util_pct: float | None  # all cores: 100 = every core busy
    process_cpu_pct: float | None  # 100 = one core
    gpu_util_pct: float | None  # GPU 0, NVML utilization
    gpu_util_reason: str | None  # why gpu_util_pct is None
    # The container's CPU quota over the windows together (summed deltas); None with the reason
    # where there is no quota or its counters were not read (docs/verdict.md, "The container").
    throttling: Throttling | None = None
    throttling_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["throttling"] = None if self.throttling is None else self.throttling.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Usage:
        d = dict(d)
        if d.get("throttling") is not None:
            d["throttling"] = Throttling.from_dict(d["throttling"])
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
    throttled, throttled_reason = throttling_over(log, windows)
    return Usage(
        samples=len(samples),
        cpu_util_pct=_mean([s.cpu.total_pct for s in samples]),
        process_cpu_pct=_mean([s.cpu.process_pct for s in samples]),
        gpu_util_pct=_mean(gpu),
        gpu_util_reason=reason,
        throttling=throttled,
        throttling_reason=throttled_reason,
    )


def throttling_over(log: SampleLog, windows: Sequence[tuple[int, int]]) -> tuple[Throttling | None, str | None]:
    """The quota's counters summed over the windows: each window's delta between its first and
    last sample that read them (another side's turn between windows is not counted)."""
    container = log.container
    if container is None:
        return None, "the container's limits were not read"
    if container.cpu_stat_path is None:
        return None, container.throttle_reason or "no CPU quota"
    deltas = []
    for start, end in windows:
        read = [s for s in log.between(start, end) if s.throttle is not None]
        if len(read) >= 2:
            delta = throttling(read[0].throttle, read[-1].throttle, (read[-1].time_ns - read[0].time_ns) / 1e9,
                               container.quota_cores)
            if delta is not None:
                deltas.append(delta)
    if not deltas:
        return None, "no window held two samples that read the throttling counters"
    return Throttling(sum(d.periods for d in deltas), sum(d.throttled_periods for d in deltas),
                      sum(d.throttled_s for d in deltas), sum(d.span_s for d in deltas), container.quota_cores), None
