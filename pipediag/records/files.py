"""The JSON files: the header every result file starts with, safe writes, and loading with usable errors.

A regular file is written whole or not at all (a temporary file in its folder, renamed over it).
Anything else a path can name is written in place, as a shell's `>` would: a character device
(`/dev/null`, `/dev/full`, a terminal), a FIFO, `/dev/stdout` and the other `/dev/fd/N` and
`/proc/.../fd/N` names; a rename would put a regular file where the device or pipe was (as root)
or fail (as anyone else). A symbolic link is followed: its target is written, atomically in the
target's folder, and the link stays a link.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import tempfile
from typing import Any

from pipediag.errors import OutputError, UsageError

# Names that stand for a descriptor this process already holds: writing them through a rename
# would replace the file the descriptor points at (its other writers keep the old one).
_DESCRIPTOR_FOLDERS = ("/dev/fd/", "/proc/")
_MAX_LINKS = 40  # as the kernel's own limit on a chain of symbolic links (ELOOP)


def json_text(data: dict[str, Any]) -> str:
    """A result file's text: strict JSON (no NaN or Infinity: a ValueError), one key a line."""
    return json.dumps(data, indent=1, allow_nan=False) + "\n"


def write_json(data: dict[str, Any], path: str) -> None:
    """Write `json_text(data)` safely (see `write_text`)."""
    write_text(json_text(data), path)


def write_text(text: str, path: str) -> None:
    """Write `text` to `path`. A regular file (or a new one) atomically: a temp file in the same
    folder, flushed to disk, then renamed over the target, so a reader (or a Ctrl-C, or a power
    cut) never sees half a file: the file is whole or as it was; an existing file keeps its
    permissions, and one this process may not write is refused as `>` would refuse it. A device,
    FIFO or descriptor name (`/dev/stdout`) is written in place. A symbolic link: its target, so.
    An OS error (full disk, no permission, a full device such as /dev/full) is an `OutputError`
    naming the file, and leaves no temp file behind."""
    try:
        target, in_place = resolve(path)
        if in_place:
            _write_in_place(text, target)
        else:
            _write_atomically(text, target)
    except OSError as error:
        raise OutputError(path, error) from error


def resolve(path: str) -> tuple[str, bool]:
    """(the file a write to `path` must change, whether it is written in place). Follows a chain
    of symbolic links one by one, so that `/dev/stdout` -> `/proc/self/fd/1` is seen for what it
    is even when descriptor 1 is a regular file (`> out.txt`): that file must be appended to by
    this process's own descriptor, not replaced."""
    current = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        if current.startswith(_DESCRIPTOR_FOLDERS):
            return current, True
        if not os.path.islink(current):
            break
        current = os.path.join(os.path.dirname(current), os.readlink(current))
        current = os.path.abspath(current)
    else:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
    try:
        mode = os.stat(current).st_mode
    except (FileNotFoundError, NotADirectoryError):  # a new file (a path through a file: the write says so)
        return current, False
    return current, not stat.S_ISREG(mode)


def is_in_place(path: str) -> bool:
    """Is `path` something written in place (a device, FIFO, descriptor name)? False when it
    cannot be told (a loop of links): the write says why."""
    try:
        return resolve(path)[1]
    except OSError:
        return False


def _write_in_place(text: str, path: str) -> None:
    """A device or FIFO: opened for writing as it is (a FIFO waits for its reader, as with `>`), no
    fsync (a pipe or terminal has none). A name of one of this process's descriptors (`/dev/stdout`
    is /proc/self/fd/1): written through that descriptor, at its offset, after what Python holds
    for it, as a shell's `>&1` would: opening the name again would truncate a regular file behind
    it (`> out.txt`). A full device fails at the write or the final flush (ENOSPC), raised like
    any other OS error (EBADF for a descriptor this process does not hold)."""
    fd = _own_descriptor(path)
    if fd is not None:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None and _fileno(stream) == fd:
                stream.flush()
        with os.fdopen(os.dup(fd), "w", encoding="utf-8") as f:
            f.write(text)
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()


def _own_descriptor(path: str) -> int | None:
    """N for /dev/fd/N, /proc/self/fd/N and /proc/<this process>/fd/N; None for any other name."""
    parts = path.strip("/").split("/")
    own = (parts[:2] == ["dev", "fd"] and len(parts) == 3) or (
        len(parts) == 4 and parts[0] == "proc" and parts[1] in ("self", str(os.getpid())) and parts[2] == "fd")
    return int(parts[-1]) if own and parts[-1].isdigit() else None


def _fileno(stream) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError):
        return None


def _write_atomically(text: str, path: str) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    existing = _existing(path)
    if existing is not None and not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    fd, tmp = tempfile.mkstemp(prefix=".pipediag-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())  # the data is on disk before the name points at it
        _set_owner_and_mode(tmp, existing)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _existing(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _set_owner_and_mode(tmp: str, existing: os.stat_result | None) -> None:
    """mkstemp makes the file private (0600). A new file is as readable as any file the user
    writes (0666 less the umask); a file written over keeps its mode, and, where this process
    may give it (root), its owner."""
    if existing is None:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        return
    if os.geteuid() == 0 and (existing.st_uid, existing.st_gid) != (0, 0):
        os.chown(tmp, existing.st_uid, existing.st_gid)
    os.chmod(tmp, stat.S_IMODE(existing.st_mode))


def load_json(path: str) -> dict[str, Any]:
    """A pipediag JSON file as a dict (a diagnosis, comparison, sweep or scale result: see its
    "kind"), with usage errors a user can act on."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}", "give the path of a JSON file written by --json") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"{path} is not valid JSON ({error})", "give a file written by pipediag --json") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a pipediag file", "give a file written by pipediag --json")
    return data
