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
from pipediag.records.container import UNLIMITED_BYTES, ContainerLimits, ThrottleCounters
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def read_throttle(cpu_stat: str | Path | None) -> ThrottleCounters | None:
    """cgroup v1 cpu.stat (nr_periods, nr_throttled, throttled_time in ns) or v2 (throttled_usec);
    None when the file or a counter is missing."""
    if cpu_stat is None:
        return None
    fields = _keyed(_read(Path(cpu_stat)))
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


@dataclass(frozen=True)
class _Mount:
    root: str  # the cgroup shown at the mount point (mountinfo field 4)
    point: Path  # where it is mounted, under the root given to read_limits
    version: str  # "v1" | "v2"
    controllers: frozenset[str]  # v1: from the super options; v2: empty (read cgroup.controllers)


def read_limits(root: str | Path = "/", *, host_cores: int | None = None, host_memory_bytes: int | None = None,
                affinity: Callable[[], int | None] | None = None) -> ContainerLimits:
    """This process's limits. `root` is where /proc and /sys are found (tests point it at a tree
    of fixture files); `affinity` returns the number of CPUs this process may run on."""
    root = Path(root)
    host = host_cores or os.cpu_count() or 1
    if host_memory_bytes is None:
        host_memory_bytes = _host_memory_bytes(root)
    allowed = (affinity or _affinity)()
    mounts = _mounts(root)
    paths = _cgroup_paths(root)
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


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _keyed(text: str | None) -> dict[str, int] | None:
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        try:
            out[key] = int(value.strip())
        except ValueError:
            continue
    return out


def _affinity() -> int | None:
    if not hasattr(os, "sched_getaffinity"):  # macOS, Windows: no affinity to read
        return None
    return len(os.sched_getaffinity(0))


def _host_memory_bytes(root: Path) -> int | None:
    text = _read(root / "proc/meminfo")
    for line in (text or "").splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    if str(root) == "/":
        import psutil  # not Linux: psutil knows the platform's way

        return psutil.virtual_memory().total
    return None


def _unescape(field: str) -> str:
    """mountinfo writes a space as \\040 (and tab, newline, backslash likewise, in octal)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _mounts(root: Path) -> list[_Mount] | None:
    text = _read(root / "proc/self/mountinfo")
    if text is None:
        return None
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 1:
            continue
        fstype = tail[0]
        if fstype not in ("cgroup", "cgroup2"):
            continue
        point = root / _unescape(fields[4]).lstrip("/")
        options = set(tail[2].split(",")) if len(tail) >= 3 else set()
        if fstype == "cgroup":
            mounts.append(_Mount(_unescape(fields[3]), point, "v1", frozenset(options & {"cpu", "cpuset", "memory"})))
        else:
            mounts.append(_Mount(_unescape(fields[3]), point, "v2", frozenset()))
    return mounts


@dataclass(frozen=True)
class _Paths:
    v1: dict[str, str]  # controller -> this process's cgroup path in that hierarchy
    v2: str | None  # this process's path in the unified hierarchy


def _cgroup_paths(root: Path) -> _Paths | None:
    text = _read(root / "proc/self/cgroup")
    if text is None:
        return None
    v1: dict[str, str] = {}
    v2 = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            v2 = path
        else:
            for c in controllers.split(","):
                v1[c] = path
    return _Paths(v1, v2)


def _cgroup_dir(mount: _Mount, path: str) -> Path:
    """Where this process's cgroup is under a mount. The mount shows the cgroup `mount.root` at
    its mount point: in a container that sees only its own cgroup, the mount root is that cgroup
    and /proc/self/cgroup names it too (or, with a cgroup namespace, both are "/"). A path outside
    the mount root ("/.." from a cgroup namespace) cannot be reached: the mount point is the
    nearest that can."""
    if mount.root == "/":
        relative = path
    elif path == mount.root or path.startswith(mount.root.rstrip("/") + "/"):
        relative = path[len(mount.root):]
    else:
        relative = "/"
    if ".." in relative.split("/"):
        relative = "/"
    return mount.point / relative.lstrip("/")


def _levels(mount: _Mount, path: str) -> list[Path]:
    """This process's cgroup and its ancestors up to the mount point: a parent's limit binds
    every cgroup under it, so the effective limit is the smallest on the way up."""
    leaf = _cgroup_dir(mount, path)
    out = [leaf]
    while out[-1] != mount.point and mount.point in out[-1].parents:
        out.append(out[-1].parent)
    return out


def _v1_mount(mounts: list[_Mount], controller: str, paths: _Paths) -> tuple[_Mount, str] | None:
    path = paths.v1.get(controller)
    for m in mounts:
        if m.version == "v1" and controller in m.controllers and path is not None:
            return m, path
    return None


def _v2_mount(mounts: list[_Mount], controller: str, paths: _Paths) -> tuple[_Mount, str] | None:
    """The unified hierarchy, where it runs `controller` (listed in its root's cgroup.controllers)."""
    if paths.v2 is None:
        return None
    for m in mounts:
        if m.version != "v2":
            continue
        enabled = _read(m.point / "cgroup.controllers")
        leaf = _read(_cgroup_dir(m, paths.v2) / "cgroup.controllers")
        if controller in (enabled or "").split() or controller in (leaf or "").split():
            return m, paths.v2
    return None


def _hierarchy(mounts: list[_Mount], controller: str, paths: _Paths) -> tuple[_Mount, str] | None:
    """A v1 hierarchy holding the controller wins (on a hybrid host the v2 one then has none of it)."""
    return _v1_mount(mounts, controller, paths) or _v2_mount(mounts, controller, paths)


@dataclass(frozen=True)
class _Quota:
    cores: float | None
    reason: str | None
    quota_us: int | None = None
    period_us: int | None = None
    cpu_stat: str | None = None
    throttle_reason: str | None = None


def _quota(mounts: list[_Mount], paths: _Paths) -> _Quota:
    found = _hierarchy(mounts, "cpu", paths)
    if found is None:
        why = "no cgroup cpu controller for this process: no CPU quota can apply"
        return _Quota(None, why, throttle_reason=why)
    mount, path = found
    best: tuple[float, int, int, Path] | None = None
    read_any = False
    for level in _levels(mount, path):
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
               else f"no CPU quota read: {name} is missing or unreadable in {_cgroup_dir(mount, path)}")
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
        text = _read(level / "cpu.max")
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
    quota, period = _read(level / "cpu.cfs_quota_us"), _read(level / "cpu.cfs_period_us")
    if quota is None or period is None:
        return None
    try:
        q, p = int(quota.strip()), int(period.strip())
    except ValueError:
        return None
    return (None if q < 0 else q), p  # v1 writes "no limit" as -1


def _cpuset(mounts: list[_Mount], paths: _Paths) -> int | None:
    found = _hierarchy(mounts, "cpuset", paths)
    if found is None:
        return None
    mount, path = found
    leaf = _cgroup_dir(mount, path)
    # v2 and v1 name the CPUs a cgroup may really use (after its parents' restrictions) differently;
    # a v2 cgroup's own cpuset.cpus may be empty (it inherits), so the effective list comes first.
    if mount.version == "v2":
        names = ("cpuset.cpus.effective", "cpuset.cpus")
    else:
        names = ("cpuset.effective_cpus", "cpuset.cpus")
    for name in names:
        text = _read(leaf / name)
        if text is not None and text.strip():
            return parse_cpu_list(text)
    return None


def _memory(mounts: list[_Mount], paths: _Paths) -> tuple[int | None, str | None]:
    found = _hierarchy(mounts, "memory", paths)
    if found is None:
        return None, "no cgroup memory controller for this process: no memory limit can apply"
    mount, path = found
    name = "memory.max" if mount.version == "v2" else "memory.limit_in_bytes"
    limits = []
    read_any = False
    for level in _levels(mount, path):
        text = _read(level / name)
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
    return None, f"no memory limit read: {name} is missing or unreadable in {_cgroup_dir(mount, path)}"
