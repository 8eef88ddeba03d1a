"""The container this process runs in: its effective CPU and memory limits, and the CPU quota's
throttling counters. Pure Python: it reads files (cgroups under /sys/fs/cgroup, found through
/proc/self/cgroup and /proc/self/mountinfo) and asks the OS for this process's CPU affinity.

Why: in a container limited to 4 CPUs on a 64-core host, /proc/stat and os.cpu_count() still show
64 cores. The kernel lets the container's processes run `quota` microseconds of CPU time per
`period` (CFS bandwidth control), so 4 cores' worth, then stops ("throttles") them until the next
period; a cpuset or an affinity mask allows only some cores. The effective core count is the
smallest of the four. The memory limit kills the job (OOM) at `memory.max` whatever the host has.

Every limit is read for THIS process (cgroup v1, v2 and hybrid mounts). A limit that could not be
read is None with a reason; "no limit" is None with the reason saying so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipediag.records.container import UNLIMITED_BYTES, ContainerLimits, ThrottleCounters
from pipediag.samples.cgroup_fs import (
    CgroupPaths,
    Mount,
    cgroup_dir,
    hierarchy,
    keyed_values,
    levels_up,
    read_cgroup_paths,
    read_file,
    read_mounts,
)


def read_throttle(cpu_stat: str | Path | None) -> ThrottleCounters | None:
    """cgroup v1 cpu.stat (nr_periods, nr_throttled, throttled_time in ns) or v2 (throttled_usec);
    None when the file or a counter is missing."""
    if cpu_stat is None:
        return None
    fields = keyed_values(read_file(Path(cpu_stat)))
    if fields is None or "nr_periods" not in fields or "nr_throttled" not in fields:
        return None
    if "throttled_usec" in fields:
        ns = fields["throttled_usec"] * 1000
    elif "throttled_time" in fields:
        ns = fields["throttled_time"]
    else:
        return None
    return ThrottleCounters(fields["nr_periods"], fields["nr_throttled"], ns)


def parse_cpu_list(text: str) -> int | None:
    """The number of CPUs in a kernel CPU list ("0-3,8" is 5); None for an empty or bad list."""
    count = 0
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            return None
        if last < first:
            return None
        count += last - first + 1
    return count or None


def read_limits(root: str | Path = "/", *, host_cores: int | None = None, host_memory_bytes: int | None = None,
                affinity: Callable[[], int | None] | None = None) -> ContainerLimits:
    """This process's limits. `root` is where /proc and /sys are found (tests point it at a tree
    of fixture files); `affinity` returns the number of CPUs this process may run on."""
    root = Path(root)
    host = host_cores or os.cpu_count() or 1
    if host_memory_bytes is None:
        host_memory_bytes = _host_memory_bytes(root)
    allowed = (affinity or _affinity)()
    mounts = read_mounts(root)
    paths = read_cgroup_paths(root)
    common = dict(host_cores=host, affinity_cores=allowed, host_memory_bytes=host_memory_bytes)
    if mounts is None or paths is None:
        why = "no cgroups: /proc/self/cgroup or /proc/self/mountinfo could not be read (not Linux?)"
        return ContainerLimits(cpuset_cores=None, quota_cores=None, quota_reason=why, cgroup=None,
                               memory_limit_bytes=None, memory_reason=why, throttle_reason=why, **common)
    versions = {m.version for m in mounts}
    cgroup = "hybrid" if versions == {"v1", "v2"} else (versions.pop() if versions else None)
    if cgroup is None:
        why = "no cgroup file system is mounted"
        return ContainerLimits(cpuset_cores=None, quota_cores=None, quota_reason=why, cgroup=None,
                               memory_limit_bytes=None, memory_reason=why, throttle_reason=why, **common)
    quota = _quota(mounts, paths)
    memory, memory_reason = _memory(mounts, paths)
    return ContainerLimits(
        cpuset_cores=_cpuset(mounts, paths), quota_cores=quota.cores, quota_reason=quota.reason, cgroup=cgroup,
        memory_limit_bytes=memory, memory_reason=memory_reason, quota_us=quota.quota_us,
        period_us=quota.period_us, cpu_stat_path=quota.cpu_stat, throttle_reason=quota.throttle_reason, **common,
    )


def _affinity() -> int | None:
    if not hasattr(os, "sched_getaffinity"):  # macOS, Windows: no affinity to read
        return None
    return len(os.sched_getaffinity(0))


def _host_memory_bytes(root: Path) -> int | None:
    text = read_file(root / "proc/meminfo")
    for line in (text or "").splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    if str(root) == "/":
        import psutil  # not Linux: psutil knows the platform's way

        return psutil.virtual_memory().total
    return None


@dataclass(frozen=True)
class _Quota:
    cores: float | None
    reason: str | None
    quota_us: int | None = None
    period_us: int | None = None
    cpu_stat: str | None = None
    throttle_reason: str | None = None


def _quota(mounts: list[Mount], paths: CgroupPaths) -> _Quota:
    found = hierarchy(mounts, "cpu", paths)
    if found is None:
        why = "no cgroup cpu controller for this process: no CPU quota can apply"
        return _Quota(None, why, throttle_reason=why)
    mount, path = found
    best: tuple[float, int, int, Path] | None = None
    read_any = False
    for level in levels_up(mount, path):
        pair = _quota_at(level, mount.version)
        if pair is None:
            continue
        read_any = True
        quota_us, period_us = pair
        if quota_us is None or period_us <= 0:
            continue
        cores = quota_us / period_us
        if best is None or cores < best[0]:
            best = (cores, quota_us, period_us, level)
    name = "cpu.max" if mount.version == "v2" else "cpu.cfs_quota_us"
    if best is None:
        why = (f"no CPU quota ({name} is unlimited for this process's cgroup and its parents)" if read_any
               else f"no CPU quota read: {name} is missing or unreadable in {cgroup_dir(mount, path)}")
        return _Quota(None, why, throttle_reason="no CPU quota: nothing throttles")
    cores, quota_us, period_us, level = best
    stat = level / "cpu.stat"
    if read_throttle(stat) is None:
        return _Quota(cores, None, quota_us, period_us, None,
                      f"{stat} has no throttling counters (nr_periods, nr_throttled) or cannot be read")
    return _Quota(cores, None, quota_us, period_us, str(stat), None)


def _quota_at(level: Path, version: str) -> tuple[int | None, int] | None:
    """(quota_us or None for no limit, period_us) at one cgroup; None when not readable."""
    if version == "v2":
        text = read_file(level / "cpu.max")
        if text is None:
            return None
        parts = text.split()
        if len(parts) != 2:
            return None
        try:
            period = int(parts[1])
            return (None if parts[0] == "max" else int(parts[0])), period
        except ValueError:
            return None
    quota, period = read_file(level / "cpu.cfs_quota_us"), read_file(level / "cpu.cfs_period_us")
    if quota is None or period is None:
        return None
    try:
        q, p = int(quota.strip()), int(period.strip())
    except ValueError:
        return None
    return (None if q < 0 else q), p  # v1 writes "no limit" as -1


def _cpuset(mounts: list[Mount], paths: CgroupPaths) -> int | None:
    found = hierarchy(mounts, "cpuset", paths)
    if found is None:
        return None
    mount, path = found
    leaf = cgroup_dir(mount, path)
    # v2 and v1 name the CPUs a cgroup may really use (after its parents' restrictions) differently;
    # a v2 cgroup's own cpuset.cpus may be empty (it inherits), so the effective list comes first.
    if mount.version == "v2":
        names = ("cpuset.cpus.effective", "cpuset.cpus")
    else:
        names = ("cpuset.effective_cpus", "cpuset.cpus")
    for name in names:
        text = read_file(leaf / name)
        if text is not None and text.strip():
            return parse_cpu_list(text)
    return None


def _memory(mounts: list[Mount], paths: CgroupPaths) -> tuple[int | None, str | None]:
    found = hierarchy(mounts, "memory", paths)
    if found is None:
        return None, "no cgroup memory controller for this process: no memory limit can apply"
    mount, path = found
    name = "memory.max" if mount.version == "v2" else "memory.limit_in_bytes"
    limits = []
    read_any = False
    for level in levels_up(mount, path):
        text = read_file(level / name)
        if text is None:
            continue
        read_any = True
        value = text.strip()
        if value == "max":
            continue
        try:
            limit = int(value)
        except ValueError:
            continue
        if limit < UNLIMITED_BYTES:
            limits.append(limit)
    if limits:
        return min(limits), None
    if read_any:
        return None, f"no memory limit ({name} is unlimited for this process's cgroup and its parents)"
    return None, f"no memory limit read: {name} is missing or unreadable in {cgroup_dir(mount, path)}"
