"""The header every pipediag result file starts with, one definition for the five results
(diagnosis, comparison, scale, sweep, baseline profile): schema_version, kind, pipediag_version,
created_at, status, elapsed_s, in that order."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from pipediag._version import __version__

# 2 (2026-12-02): a diagnosis says where its time went (`phases`); the other kinds are unchanged.
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)  # a version-1 file reads as it was written (a diagnosis: no phases)


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


def run_header(kind: str, result: Any) -> dict[str, Any]:
    """The header, then what the file of every measured run (diagnosis, scale, sweep) says next:
    the target, the step, the environment and the settings, in that order."""
    return {**file_header(kind, result), "target": result.target,
            "step": None if result.step is None else result.step.to_dict(),
            "environment": result.environment.to_dict(), "settings": dict(result.settings)}


def run_header_fields(d: dict[str, Any], step_type: Any, environment_type: Any) -> dict[str, Any]:
    """`run_header` read back: the constructor's fields, with the step's and the environment's
    record types given (they live above this module)."""
    step = d.get("step")
    return {**header_fields(d), "target": d["target"], "step": None if step is None else step_type.from_dict(step),
            "environment": environment_type.from_dict(d["environment"]), "settings": dict(d.get("settings", {}))}
