"""This process's cgroup directories (v1, v2 and hybrid mounts), found through /proc/self/mountinfo and
/proc/self/cgroup, and reading their files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mount:
    root: str  # the cgroup shown at the mount point (mountinfo field 4)
    point: Path  # where it is mounted, under the root given to read_limits
    version: str  # "v1" | "v2"
    controllers: frozenset[str]  # v1: from the super options; v2: empty (read cgroup.controllers)


def read_file(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def keyed_values(text: str | None) -> dict[str, int] | None:
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


def read_mounts(root: Path) -> list[Mount] | None:
    text = read_file(root / "proc/self/mountinfo")
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
            mounts.append(Mount(_unescape(fields[3]), point, "v1", frozenset(options & {"cpu", "cpuset", "memory"})))
        else:
            mounts.append(Mount(_unescape(fields[3]), point, "v2", frozenset()))
    return mounts


@dataclass(frozen=True)
class CgroupPaths:
    v1: dict[str, str]  # controller -> this process's cgroup path in that hierarchy
    v2: str | None  # this process's path in the unified hierarchy


def read_cgroup_paths(root: Path) -> CgroupPaths | None:
    text = read_file(root / "proc/self/cgroup")
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
    return CgroupPaths(v1, v2)


def cgroup_dir(mount: Mount, path: str) -> Path:
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


def levels_up(mount: Mount, path: str) -> list[Path]:
    """This process's cgroup and its ancestors up to the mount point: a parent's limit binds
    every cgroup under it, so the effective limit is the smallest on the way up."""
    leaf = cgroup_dir(mount, path)
    out = [leaf]
    while out[-1] != mount.point and mount.point in out[-1].parents:
        out.append(out[-1].parent)
    return out


def _v1_mount(mounts: list[Mount], controller: str, paths: CgroupPaths) -> tuple[Mount, str] | None:
    path = paths.v1.get(controller)
    for m in mounts:
        if m.version == "v1" and controller in m.controllers and path is not None:
            return m, path
    return None


def _v2_mount(mounts: list[Mount], controller: str, paths: CgroupPaths) -> tuple[Mount, str] | None:
    """The unified hierarchy, where it runs `controller` (listed in its root's cgroup.controllers)."""
    if paths.v2 is None:
        return None
    for m in mounts:
        if m.version != "v2":
            continue
        enabled = read_file(m.point / "cgroup.controllers")
        leaf = read_file(cgroup_dir(m, paths.v2) / "cgroup.controllers")
        if controller in (enabled or "").split() or controller in (leaf or "").split():
            return m, paths.v2
    return None


def hierarchy(mounts: list[Mount], controller: str, paths: CgroupPaths) -> tuple[Mount, str] | None:
    """A v1 hierarchy holding the controller wins (on a hybrid host the v2 one then has none of it)."""
    return _v1_mount(mounts, controller, paths) or _v2_mount(mounts, controller, paths)
