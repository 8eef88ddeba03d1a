"""The result of a sweep: per batch size throughput, peak memory and the OOM edge, with its JSON round trip."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipediag.analysis.gpu import PeakMemory
from pipediag.analysis.sweep import Knee, OomEdge
from pipediag.errors import UsageError
from pipediag.records.environment import Environment
from pipediag.records.header import READABLE_VERSIONS, SCHEMA_VERSION, created_now, run_header, run_header_fields
from pipediag.records.kinds import INTERRUPTED, OK, OUT_OF_MEMORY, SKIPPED, STALLED, Bottleneck, PointStatus, Status  # noqa: F401 (re-exported: results.sweep.OK ...)
from pipediag.records.memory import MemoryLimit
from pipediag.records.record import with_tuples
from pipediag.records.run import ErrorInfo
from pipediag.records.step import StepInfo

KIND = "sweep"
# A sweep file written before pipediag recorded the precision: the user's builder may have set any
# Keras policy itself, so nothing says which it was.
PRECISION_NOT_RECORDED = "not recorded: the file was written before pipediag recorded the precision"




SWEEP_MODES = ("synthetic", "pipeline")


@dataclass(frozen=True)
class SweepPoint:
    batch_size: int
    status: PointStatus
    examples_per_sec: float | None  # the step with free input (synthetic mode)
    examples_per_sec_ci: tuple[float, float] | None
    pipeline_examples_per_sec: float | None  # fed by the pipeline
    pipeline_examples_per_sec_ci: tuple[float, float] | None
    step_ms_median: float | None  # synthetic
    input_wait_frac: float | None  # pipeline mode
    gpu_util_pct: float | None  # synthetic, NVML
    gpm_sm_active_pct: float | None  # synthetic, GPM
    peak_memory: PeakMemory | None  # synthetic
    peak_memory_reason: str | None
    bottleneck: Bottleneck | None  # the verdict at this batch size
    error: ErrorInfo | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "status": self.status,
            "examples_per_sec": self.examples_per_sec,
            "examples_per_sec_ci": self.examples_per_sec_ci,
            "pipeline_examples_per_sec": self.pipeline_examples_per_sec,
            "pipeline_examples_per_sec_ci": self.pipeline_examples_per_sec_ci,
            "step_ms_median": self.step_ms_median,
            "input_wait_frac": self.input_wait_frac,
            "gpu_util_pct": self.gpu_util_pct,
            "gpm_sm_active_pct": self.gpm_sm_active_pct,
            "peak_memory": None if self.peak_memory is None else self.peak_memory.to_dict(),
            "peak_memory_reason": self.peak_memory_reason,
            "bottleneck": self.bottleneck,
            "error": None if self.error is None else vars(self.error).copy(),
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SweepPoint:
        d = with_tuples(d, ("examples_per_sec_ci", "pipeline_examples_per_sec_ci"))
        if d.get("peak_memory") is not None:
            d["peak_memory"] = PeakMemory(**d["peak_memory"])
        if d.get("error") is not None:
            d["error"] = ErrorInfo(**d["error"])
        return cls(**d)


@dataclass(frozen=True)
class Sweep:
    status: Status  # complete | interrupted | stalled
    target: str
    step: StepInfo | None
    environment: Environment
    points: tuple[SweepPoint, ...]
    knee: Knee
    oom_edge: OomEdge
    memory_limit: MemoryLimit | None
    settings: dict[str, Any]
    notes: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    created_at: str = field(default_factory=created_now)
    precision: str | None = None  # the Keras model's dtype policy: float32 | mixed_float16 | mixed_bfloat16
    precision_reason: str | None = None  # why precision is None (a step function, an older file)

    def to_dict(self) -> dict[str, Any]:
        return {
            **run_header(KIND, self),
            "memory_limit": None if self.memory_limit is None else self.memory_limit.to_dict(),
            "precision": self.precision,
            "precision_reason": self.precision_reason,
            "points": [p.to_dict() for p in self.points],
            "knee": self.knee.to_dict(),
            "oom_edge": self.oom_edge.to_dict(),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Sweep:
        if d.get("schema_version") not in READABLE_VERSIONS or d.get("kind") != KIND:
            raise UsageError(
                f"not a sweep file of schema_version {SCHEMA_VERSION} (kind {d.get('kind')!r}, "
                f"schema_version {d.get('schema_version')!r})",
                "re-run the sweep with this version of pipediag",
            )
        return cls(
            **run_header_fields(d, StepInfo, Environment),
            points=tuple(SweepPoint.from_dict(p) for p in d["points"]),
            knee=Knee.from_dict(d["knee"]),
            oom_edge=OomEdge.from_dict(d["oom_edge"]),
            memory_limit=None if d.get("memory_limit") is None else MemoryLimit.from_dict(d["memory_limit"]),
            notes=tuple(d.get("notes", [])),
            precision=d.get("precision"),
            precision_reason=d.get("precision_reason") if "precision" in d else PRECISION_NOT_RECORDED,
        )
