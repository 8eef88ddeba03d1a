"""The JSON files: the header every result file starts with, atomic writes, and loading with usable errors."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from pipediag.errors import OutputError, UsageError


def write_json(data: dict[str, Any], path: str) -> None:
    """Write atomically (see `write_text`), strict JSON: no NaN or Infinity."""
    write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", path)


def write_text(text: str, path: str) -> None:
    """Write atomically: a temp file in the same folder, flushed to disk, then renamed over the
    target, so a reader (or a Ctrl-C, or a power cut) never sees half a file: the file is whole
    or as it was. An OS error (full disk, no permission) is an `OutputError` naming the file,
    and leaves no temp file behind."""
    try:
        _write_atomically(text, path)
    except OSError as error:
        raise OutputError(path, error) from error


def _write_atomically(text: str, path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".pipediag-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())  # the data is on disk before the name points at it
        # mkstemp makes the file private (0600); a report is as readable as any file the user writes.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
