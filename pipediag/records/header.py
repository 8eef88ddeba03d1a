"""The header every pipediag result file starts with, one definition for the five results
(diagnosis, comparison, scale, sweep, baseline profile): schema_version, kind, pipediag_version,
created_at, status, elapsed_s, in that order."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from pipediag._version import __version__

SCHEMA_VERSION = 1


def created_now() -> str:
    """A result's created_at: now, UTC, to the second (ISO 8601)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def file_header(kind: str, result: Any) -> dict[str, Any]:
    """The fields every pipediag JSON file starts with, from a result's status, elapsed_s and created_at."""
    return {"schema_version": SCHEMA_VERSION, "kind": kind, "pipediag_version": __version__,
            "created_at": result.created_at, "status": result.status, "elapsed_s": result.elapsed_s}


def header_fields(d: dict[str, Any]) -> dict[str, Any]:
    """The header's fields a result's constructor takes, read back from its JSON."""
    return {"status": d["status"], "elapsed_s": d.get("elapsed_s", 0.0), "created_at": d.get("created_at", "")}
