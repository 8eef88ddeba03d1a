"""The result of `compare`: a frozen object with a JSON round trip (schema_version 2, reads 1).

Like a Diagnosis it keeps the raw material (every turn's per-step timings, every round's rates,
the samples) next to what was derived from it (intervals, verdicts, per-side CPU/GPU use), so a
saved comparison can be re-rendered or re-analysed. docs/compare.md documents the format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipediag.analysis.compare import LookPlan, RatioInterval
from pipediag.analysis.usage import Usage
from pipediag.errors import UsageError
from pipediag.records.compare import Round, Segment
from pipediag.records.element import ElementInfo
from pipediag.records.environment import Environment
from pipediag.records.header import READABLE_VERSIONS, SCHEMA_VERSION, created_now, file_header, header_fields
from pipediag.records.kinds import RoundsStop, Status
from pipediag.records.readings import SampleLog
from pipediag.records.stage import Stage
from pipediag.records.step import StepInfo
from pipediag.verdict.compare import ComparisonVerdict

KIND = "comparison"


@dataclass(frozen=True)
class SideInfo:
    """What one side of the comparison was."""

    label: str  # the spec, with its --arg-a/--arg-b arguments
    source: str  # live (measured in this run) | saved (read from a diagnose --json file)
    element: ElementInfo | None
    stages: tuple[Stage, ...]
    cardinality: int | str | None
    first_batch_ms: float | None
    saved_file: str | None = None
    saved_created_at: str | None = None
    rate_scale: float = 1.0  # batches/s -> the comparison's unit

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label, "source": self.source,
            "element": None if self.element is None else self.element.to_dict(),
            "stages": [s.to_dict() for s in self.stages], "cardinality": self.cardinality,
            "first_batch_ms": self.first_batch_ms, "saved_file": self.saved_file,
            "saved_created_at": self.saved_created_at, "rate_scale": self.rate_scale,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SideInfo:
        return cls(
            label=d["label"], source=d["source"],
            element=None if d.get("element") is None else ElementInfo.from_dict(d["element"]),
            stages=tuple(Stage.from_dict(s) for s in d.get("stages", [])), cardinality=d.get("cardinality"),
            first_batch_ms=d.get("first_batch_ms"), saved_file=d.get("saved_file"),
            saved_created_at=d.get("saved_created_at"), rate_scale=d.get("rate_scale", 1.0),
        )


@dataclass(frozen=True)
class SideNumbers:
    """One side, one kind (fed step or input only), over all its turns in the rounds."""

    rate: float | None  # in the comparison's unit, over all counted turns: steps / time
    steps: int
    input_wait_frac: float | None  # fed: share of step time spent waiting for the batch
    usage: Usage | None  # None for a saved side whose file had no samples

    def to_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "steps": self.steps, "input_wait_frac": self.input_wait_frac,
                "usage": None if self.usage is None else self.usage.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SideNumbers:
        return cls(d["rate"], d["steps"], d.get("input_wait_frac"),
                   None if d.get("usage") is None else Usage.from_dict(d["usage"]))


@dataclass(frozen=True)
class Comparison:
    status: Status  # complete | interrupted | stalled | failed (the user's code raised in a round)
    a: SideInfo
    b: SideInfo
    step: StepInfo | None
    environment: Environment
    baseline_environment: Environment | None  # the saved run's machine, with --baseline
    plan: LookPlan
    unit: str  # batches | examples (when the two sides' batch sizes differ)
    primary: str  # the kind the verdict and the gate speak of: fed, unless only input_only ran
    intervals: dict[str, RatioInterval | None]  # kind -> B/A
    verdicts: dict[str, ComparisonVerdict]  # kind -> verdict
    sides: dict[str, dict[str, SideNumbers]]  # side -> kind -> numbers
    rounds: tuple[Round, ...]
    segments: tuple[Segment, ...]
    stop_reason: RoundsStop
    looks_taken: int
    segment_seconds: float
    baseline_chunks: dict[str, tuple[float, ...]]
    samples: SampleLog
    settings: dict[str, Any]
    notes: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    created_at: str = field(default_factory=created_now)
    # status "failed": the user's error, for the command line to show with its traceback after
    # the partial report. Not in the JSON (notes[0] says whose turn failed and how); None after
    # a round trip.
    error: Exception | None = field(default=None, compare=False, repr=False)

    @property
    def verdict(self) -> ComparisonVerdict:
        return self.verdicts[self.primary]

    @property
    def interval(self) -> RatioInterval | None:
        return self.intervals.get(self.primary)

    @property
    def regression(self) -> bool:
        """--fail-if-slower: B slower than A by more than the limit, with confidence."""
        return bool(self.verdict.regression)

    def summary(self, kind: str) -> dict[str, Any] | None:
        """The flat numbers of one kind: what CI scripts read (`comparison.ratio`, …)."""
        if kind not in self.verdicts:
            return None
        iv, v = self.intervals.get(kind), self.verdicts[kind]
        return {
            "kind": kind,
            "ratio": None if iv is None else iv.ratio,
            "ci_low": None if iv is None else iv.low,
            "ci_high": None if iv is None else iv.high,
            "verdict": v.verdict,
            "rounds": len(self.rounds),
            "percent_change": None if iv is None else iv.percent,
            "effect_dz": None if iv is None else iv.effect_dz,
            "confidence": self.plan.confidence,
            "level_per_look": self.plan.level,
            "looks_taken": self.looks_taken,
            "method": None if iv is None else iv.method,
            "equivalent": v.equivalent,
            "fail_if_slower": v.slower_limit,
            "regression": v.regression,
            "stop_reason": self.stop_reason,
            "headline": v.headline,
            "reason": v.reason,
            "unit": self.unit,
        }

    def to_dict(self) -> dict[str, Any]:
        kinds = list(self.verdicts)
        return {
            **file_header(KIND, self),
            "comparison": self.summary(self.primary),
            "input_only": self.summary("input_only") if self.primary != "input_only" else None,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "step": None if self.step is None else self.step.to_dict(),
            "environment": self.environment.to_dict(),
            "baseline_environment": None if self.baseline_environment is None else self.baseline_environment.to_dict(),
            "settings": {**self.settings, "plan": self.plan.to_dict(), "segment_seconds": self.segment_seconds},
            "unit": self.unit,
            "primary": self.primary,
            "intervals": {k: None if self.intervals.get(k) is None else self.intervals[k].to_dict() for k in kinds},
            "verdicts": {k: v.to_dict() for k, v in self.verdicts.items()},
            "sides": {s: {k: n.to_dict() for k, n in per.items()} for s, per in self.sides.items()},
            "rounds": [r.to_dict() for r in self.rounds],
            "baseline_chunks": {k: list(v) for k, v in self.baseline_chunks.items()},
            "segments": [s.to_dict() for s in self.segments],
            "notes": list(self.notes),
            "samples": self.samples.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Comparison:
        if d.get("schema_version") not in READABLE_VERSIONS or d.get("kind") != KIND:
            raise UsageError(
                f"not a pipediag comparison file of schema_version {SCHEMA_VERSION}",
                "give a file written by 'pipediag compare --json'",
            )
        base_env = d.get("baseline_environment")
        return cls(
            **header_fields(d),
            a=SideInfo.from_dict(d["a"]),
            b=SideInfo.from_dict(d["b"]),
            step=None if d.get("step") is None else StepInfo.from_dict(d["step"]),
            environment=Environment.from_dict(d["environment"]),
            baseline_environment=None if base_env is None else Environment.from_dict(base_env),
            plan=LookPlan.from_dict(d["settings"]["plan"]),
            unit=d["unit"],
            primary=d["primary"],
            intervals={k: None if v is None else RatioInterval.from_dict(v) for k, v in d["intervals"].items()},
            verdicts={k: ComparisonVerdict.from_dict(v) for k, v in d["verdicts"].items()},
            sides={s: {k: SideNumbers.from_dict(n) for k, n in per.items()} for s, per in d["sides"].items()},
            rounds=tuple(Round.from_dict(r) for r in d["rounds"]),
            segments=tuple(Segment.from_dict(s) for s in d["segments"]),
            stop_reason=d["comparison"]["stop_reason"],
            looks_taken=d["comparison"]["looks_taken"],
            segment_seconds=d["settings"]["segment_seconds"],
            baseline_chunks={k: tuple(v) for k, v in d.get("baseline_chunks", {}).items()},
            samples=SampleLog.from_dict(d["samples"]),
            settings={k: v for k, v in d["settings"].items() if k not in ("plan", "segment_seconds")},
            notes=tuple(d.get("notes", [])),
        )


def read_comparison(data: dict[str, Any]) -> Comparison:
    return Comparison.from_dict(data)


def is_comparison(data: dict[str, Any]) -> bool:
    return isinstance(data, dict) and data.get("kind") == KIND
