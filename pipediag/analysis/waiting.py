"""Which CPUs were busy while the step waited for input: samples weighted by their overlap
with the waiting intervals.

A sample covers the interval since the previous one. Its weight is the fraction of that
interval the training loop spent blocked in `next(iterator)`. Weighted means then describe the
machine *while input was the holdup*, not on average.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.records.readings import Sample
from pipediag.records.run import ModeRun


@dataclass(frozen=True)
class CpuWhileWaiting:
    weight_s: float  # waiting time covered by samples
    purity: float  # share of the weighted samples' time that was waiting: low = mixed with the step
    busy_cores: float  # cores' worth of work, summed over cores (2.0 = two cores fully busy)
    per_core_pct: tuple[float, ...]
    process_pct: float  # this process; 100 = one core
    iowait_pct: float | None
    cores: int  # the host's, as sampled
    effective_cores: float | None = None  # the container's limit (quota, cpuset, affinity), when read

    @property
    def usable_cores(self) -> float:
        """The cores the pipeline could have used: the container's limit, else the host's."""
        return self.effective_cores if self.effective_cores is not None else float(self.cores)


def waiting_intervals(run: ModeRun) -> list[tuple[int, int]]:
    """Absolute [start, end) of each wait, rebuilt from consecutive step durations. A step run
    with one in flight waits at the end of its fetch: the part the device's work did not hide."""
    t = run.start_ns
    out = []
    fetches = run.fetch_ns or (None,) * len(run.wait_ns)
    for wait, compute, fetch in zip(run.wait_ns, run.compute_ns, fetches):
        if wait > 0:
            start = t if fetch is None else t + fetch - wait
            out.append((start, start + wait))
        t += wait + compute
    return out


def _overlap_ns(intervals: list[tuple[int, int]], lo: int, hi: int, start_index: int) -> tuple[int, int]:
    total = 0
    i = start_index
    while i < len(intervals) and intervals[i][1] <= lo:
        i += 1
    j = i
    while j < len(intervals) and intervals[j][0] < hi:
        a, b = intervals[j]
        total += max(0, min(b, hi) - max(a, lo))
        j += 1
    return total, i


def cpu_while_waiting(run: ModeRun, samples: tuple[Sample, ...], interval_ns: int) -> CpuWhileWaiting | None:
    """None when no sample overlaps a wait (too short a mode, or nothing waited).
    `interval_ns` is the sampling period: the first sample covers that much time before it."""
    return cpu_during(waiting_intervals(run), samples, interval_ns)


def cpu_during(intervals: list[tuple[int, int]], samples: tuple[Sample, ...], interval_ns: int) -> CpuWhileWaiting | None:
    """The same, for absolute, sorted, non-overlapping [start, end) waiting intervals (e.g. the
    waits of a `fit`, whose epochs leave gaps that `waiting_intervals` cannot know about)."""
    if not intervals or not samples:
        return None
    weights = []
    cursor = 0
    last = samples[0].time_ns - interval_ns
    for s in samples:
        overlap, cursor = _overlap_ns(intervals, last, s.time_ns, cursor)
        weights.append(overlap)
        last = s.time_ns
    total = sum(weights)
    if total <= 0:
        return None
    spans = []
    last = samples[0].time_ns - interval_ns
    for s in samples:
        spans.append(s.time_ns - last)
        last = s.time_ns
    touched = sum(span for w, span in zip(weights, spans) if w > 0)
    cores = len(samples[0].cpu.per_core_pct)
    per_core = tuple(
        sum(w * s.cpu.per_core_pct[k] for w, s in zip(weights, samples) if len(s.cpu.per_core_pct) > k) / total
        for k in range(cores)
    )
    iowaits = [(w, s.cpu.iowait_pct) for w, s in zip(weights, samples) if s.cpu.iowait_pct is not None]
    iowait = sum(w * v for w, v in iowaits) / sum(w for w, _ in iowaits) if iowaits and sum(w for w, _ in iowaits) else None
    return CpuWhileWaiting(
        weight_s=total / 1e9,
        purity=total / touched if touched else 0.0,
        busy_cores=sum(per_core) / 100.0,
        per_core_pct=per_core,
        process_pct=sum(w * s.cpu.process_pct for w, s in zip(weights, samples)) / total,
        iowait_pct=iowait,
        cores=cores,
    )
