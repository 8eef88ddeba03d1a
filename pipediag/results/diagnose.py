"""The result of a diagnosis: a frozen object with a JSON round trip (schema_version 2; a version-1 file,
written before `phases`, reads with none).

It keeps the raw material (per-step timings, every sample) next to what was derived from it
(per-mode summaries, verdict, fixes), so a saved run can be re-rendered or compared later.
docs/json-schema.md documents the format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipediag.analysis.ablation import Ablation
from pipediag.analysis.handover import Handover
from pipediag.analysis.modes import ModeSummary, summary_from_dict
from pipediag.analysis.waterfall import Anatomy
from pipediag.errors import UsageError
from pipediag.fixes.recommend import Fix
from pipediag.records.change import Change
from pipediag.records.element import ElementInfo
from pipediag.records.environment import Environment
from pipediag.records.files import load_json
from pipediag.records.header import (  # noqa: F401 (SCHEMA_VERSION, file_header: re-exported)
    READABLE_VERSIONS,
    SCHEMA_VERSION,
    created_now,
    file_header,
    header_fields,
    run_header,
    run_header_fields,
)
from pipediag.records.kinds import Status
from pipediag.records.phases import Phase
from pipediag.records.readings import SampleLog
from pipediag.records.run import ModeRun
from pipediag.records.stage import Stage
from pipediag.records.stall import StallInfo
from pipediag.records.step import StepInfo
from pipediag.records.verdict import Verdict

MODE_NAMES = ("synthetic", "pipeline", "input_only", "tuned")


@dataclass(frozen=True)
class Diagnosis:
    status: Status  # the user's code raised mid-run: "failed"
    target: str
    step: StepInfo | None
    environment: Environment
    element: ElementInfo | None
    cardinality: int | str | None  # batches per pass, "infinite" or "unknown"
    first_batch_ms: float | None
    stages: tuple[Stage, ...]
    runs: dict[str, ModeRun]
    modes: dict[str, ModeSummary]
    tuning: tuple[Change, ...]
    tuned_check: str | None  # how the tuned pipeline's output was checked against the original's
    cache_fill_ms: float | None
    verdict: Verdict | None
    fixes: tuple[Fix, ...]
    tried: tuple[Change, ...]
    samples: SampleLog
    settings: dict[str, Any]
    notes: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    created_at: str = field(default_factory=created_now)
    anatomy: Anatomy | None = None  # the rate after each stage, and the slow stage
    ablation: Ablation | None = None  # what each tuned-mode change gave on its own
    handover: Handover | None = None  # one already-produced batch handed to the step: get_next, conversion, copy
    handover_missing: str | None = None  # why the hand-over could not be timed (pipediag's own measurement failed)
    stall: StallInfo | None = None  # status "stalled": where, and the stage when it could be found
    phases: tuple[Phase, ...] = ()  # where elapsed_s went (records.phases); () in files before schema 2
    # The command's process before the diagnosis began (Python, the imports, the builder's module),
    # seconds; None where unknown: through the Python API, in files before it was recorded.
    startup_s: float | None = None
    # status "failed": the user's error, for the command line to show with its traceback. Not in
    # the JSON (the notes say which mode failed and how); None after a round trip.
    error: Exception | None = field(default=None, compare=False, repr=False)

    def mode(self, name: str) -> ModeSummary | None:
        return self.modes.get(name)

    @property
    def bottleneck_stage(self) -> str | None:
        """The stage at fault, as the user wrote it (`map(decode_example)`): the one the verdict
        blames (a shuffle buffer that holds too much memory), else the anatomy's slow stage."""
        if self.verdict is not None and self.verdict.stage is not None:
            return self.verdict.stage
        return None if self.anatomy is None else self.anatomy.bottleneck_stage

    def to_dict(self) -> dict[str, Any]:
        modes = {}
        for name in MODE_NAMES:
            summary = self.modes.get(name)
            if summary is None:
                modes[name] = None
                continue
            d = summary.to_dict()
            run = self.runs.get(name)
            d["run"] = None if run is None else run.to_dict()
            modes[name] = d
        return {
            **run_header("diagnosis", self),
            "dataset": {
                "element": None if self.element is None else self.element.to_dict(),
                "cardinality": self.cardinality,
                "first_batch_ms": self.first_batch_ms,
                "stages": [s.to_dict() for s in self.stages],
            },
            "modes": modes,
            "handover": None if self.handover is None else self.handover.to_dict(),
            "handover_missing": self.handover_missing,
            "anatomy": None if self.anatomy is None else self.anatomy.to_dict(),
            "tuning": {
                "changes": [c.to_dict() for c in self.tuning],
                "check": self.tuned_check,
                "cache_fill_ms": self.cache_fill_ms,
                "ablation": None if self.ablation is None else self.ablation.to_dict(),
            },
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "fixes": [f.to_dict() for f in self.fixes],
            "tried": [c.to_dict() for c in self.tried],
            "notes": list(self.notes),
            "stall": None if self.stall is None else self.stall.to_dict(),
            "phases": [p.to_dict() for p in self.phases],
            "startup_s": self.startup_s,
            "samples": self.samples.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Diagnosis:
        version = d.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise UsageError(
                f"this file has schema_version {version!r}; this pipediag reads {READABLE_VERSIONS[0]} to "
                f"{SCHEMA_VERSION}",
                "re-run the diagnosis with this version of pipediag",
            )
        modes, runs = {}, {}
        for name, m in (d.get("modes") or {}).items():
            if m is None:
                continue
            run = m.get("run")
            if run is not None:
                runs[name] = ModeRun.from_dict(run)
            modes[name] = summary_from_dict({k: v for k, v in m.items() if k != "run"})
        dataset = d.get("dataset") or {}
        tuning = d.get("tuning") or {}
        return cls(
            **run_header_fields(d, StepInfo, Environment),
            element=None if dataset.get("element") is None else ElementInfo.from_dict(dataset["element"]),
            cardinality=dataset.get("cardinality"),
            first_batch_ms=dataset.get("first_batch_ms"),
            stages=tuple(Stage.from_dict(s) for s in dataset.get("stages", [])),
            runs=runs,
            modes=modes,
            tuning=tuple(Change.from_dict(c) for c in tuning.get("changes", [])),
            tuned_check=tuning.get("check"),
            cache_fill_ms=tuning.get("cache_fill_ms"),
            verdict=None if d.get("verdict") is None else Verdict.from_dict(d["verdict"]),
            fixes=tuple(Fix.from_dict(f) for f in d.get("fixes", [])),
            tried=tuple(Change.from_dict(c) for c in d.get("tried", [])),
            samples=SampleLog.from_dict(d["samples"]),
            notes=tuple(d.get("notes", [])),
            anatomy=None if d.get("anatomy") is None else Anatomy.from_dict(d["anatomy"]),
            ablation=None if tuning.get("ablation") is None else Ablation.from_dict(tuning["ablation"]),
            handover=None if d.get("handover") is None else Handover.from_dict(d["handover"]),
            handover_missing=d.get("handover_missing"),
            stall=None if d.get("stall") is None else StallInfo.from_dict(d["stall"]),
            phases=tuple(Phase.from_dict(p) for p in d.get("phases") or ()),
            startup_s=d.get("startup_s"),
        )


def read_json(path: str) -> Diagnosis:
    data = load_json(path)
    if data.get("kind", "diagnosis") != "diagnosis":
        raise UsageError(f"{path} holds a {data.get('kind')}, not a diagnosis",
                         "give a file written by 'pipediag diagnose --json/--save'")
    return Diagnosis.from_dict(data)
