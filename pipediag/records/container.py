"""The container's limits and CPU-quota throttling as recorded (samples/container.py reads them)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

# cgroup v1 writes "no limit" as the largest page count it holds (PAGE_COUNTER_MAX) in bytes:
# 9223372036854771712 with 4 KiB pages, other huge values with other page sizes. No machine has
# an exabyte of memory, so anything from 2**60 up reads as no limit.
UNLIMITED_BYTES = 2**60


@dataclass(frozen=True)
class ContainerLimits:
    """This process's CPU and memory limits as read once at the start of a run."""

    host_cores: int  # logical CPUs the host has (os.cpu_count(): what /proc/stat shows)
    affinity_cores: int | None  # CPUs this process may be scheduled on (sched_getaffinity)
    cpuset_cores: int | None  # CPUs in the cgroup's cpuset (cpuset.cpus.effective), None: no cpuset read
    quota_cores: float | None  # CFS quota / period, None: no quota (or not read: quota_reason says which)
    quota_reason: str | None  # why quota_cores is None
    cgroup: str | None  # "v1", "v2", "hybrid"; None where there are no cgroups (not Linux, not mounted)
    memory_limit_bytes: int | None  # the cgroup's memory limit; None: no limit, or not read
    memory_reason: str | None  # why memory_limit_bytes is None
    host_memory_bytes: int | None = None
    quota_us: int | None = None  # the binding quota and its period, as the kernel has them
    period_us: int | None = None
    cpu_stat_path: str | None = None  # the cpu.stat whose counters say how often that quota throttled
    throttle_reason: str | None = None  # why throttling cannot be read (no quota, no file)

    @property
    def effective_cores(self) -> float:
        """The CPU this process can use at most: the smallest of host, affinity, cpuset and quota."""
        return min(v for v in (self.host_cores, self.affinity_cores, self.cpuset_cores, self.quota_cores)
                   if v is not None)

    @property
    def cpu_source(self) -> str:
        """What sets effective_cores: "quota", "cpuset", "affinity" or "host"."""
        for name, value in (("quota", self.quota_cores), ("cpuset", self.cpuset_cores),
                            ("affinity", self.affinity_cores)):
            if value is not None and value <= self.effective_cores and value < self.host_cores:
                return name
        return "host"

    @property
    def cpu_limited(self) -> bool:
        """Fewer cores than the host shows: the host's core count would mislead."""
        return self.effective_cores < self.host_cores

    @property
    def whole_cores(self) -> int:
        """Threads that can run at once within the limit: a quota of 1.5 cores runs 2 threads part
        of the time each, so 2; never below 1."""
        return max(1, math.ceil(self.effective_cores - 1e-9))

    @property
    def effective_memory_bytes(self) -> int | None:
        """The memory this process may use: the cgroup's limit when lower than the host's."""
        values = [v for v in (self.memory_limit_bytes, self.host_memory_bytes) if v]
        return min(values) if values else None

    def cpu_text(self) -> str:
        """`the container's CPU quota (2.0 cores), not the host's 64`, or `the host's 64 cores`."""
        host = self.host_cores
        if self.cpu_source == "quota":
            return f"the container's CPU quota ({self.effective_cores:.1f} cores), not the host's {host}"
        if self.cpu_source == "cpuset":
            return f"the container's cpuset ({self.cpuset_cores} cores), not the host's {host}"
        if self.cpu_source == "affinity":
            return f"this process's CPU affinity ({self.affinity_cores} cores), not the host's {host}"
        return f"the host's {host} cores"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["effective_cores"] = self.effective_cores
        d["cpu_source"] = self.cpu_source
        d["effective_memory_bytes"] = self.effective_memory_bytes
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ContainerLimits:
        derived = ("effective_cores", "cpu_source", "effective_memory_bytes")
        return cls(**{k: v for k, v in d.items() if k not in derived})


@dataclass(frozen=True)
class ThrottleCounters:
    """One reading of a cgroup's cpu.stat (cumulative since the cgroup was made)."""

    periods: int  # enforcement periods in which the cgroup ran (nr_periods)
    throttled_periods: int  # of them, the ones in which it used up its quota (nr_throttled)
    throttled_ns: int  # time its run queues spent throttled, summed over CPUs


@dataclass(frozen=True)
class Throttling:
    """What the CPU quota did between two readings (one mode)."""

    periods: int
    throttled_periods: int
    throttled_s: float  # summed over CPUs, as the kernel counts it
    span_s: float  # the time between the two readings
    quota_cores: float | None

    @property
    def throttled_frac(self) -> float | None:
        """Share of the periods in which the quota ran out; None when no period ran."""
        return self.throttled_periods / self.periods if self.periods > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "throttled_frac": self.throttled_frac}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Throttling:
        return cls(**{k: v for k, v in d.items() if k != "throttled_frac"})


def cores_text(cores: float) -> str:
    """`1 core`, `2.5 cores`."""
    return f"{cores:g} core{'' if cores == 1 else 's'}"


def throttling(before: ThrottleCounters, after: ThrottleCounters, span_s: float,
               quota_cores: float | None) -> Throttling | None:
    """The delta between two readings; None when the counters went back (the cgroup was remade)."""
    periods = after.periods - before.periods
    throttled = after.throttled_periods - before.throttled_periods
    ns = after.throttled_ns - before.throttled_ns
    if periods < 0 or throttled < 0 or ns < 0:
        return None
    return Throttling(periods, throttled, ns / 1e9, span_s, quota_cores)
