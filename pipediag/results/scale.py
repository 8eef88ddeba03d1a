"""The result of `pipediag scale`: a frozen object with a JSON round trip (schema_version 2, reads 1).

Like a Diagnosis, it keeps the raw timings next to what was derived from them: the local modes
(synthetic, local input), the service's own cost (a constant batch through it), each worker
count's input-only and step-fed runs, the worker processes and how they ended, and the capacity
plan. docs/scale.md documents the format; `"kind": "scale"` tells it from a diagnosis file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipediag.analysis.modes import ModeSummary, summary_from_dict
from pipediag.analysis.scale import CapacityPlan, Overhead
from pipediag.errors import UsageError
from pipediag.records.element import ElementInfo
from pipediag.records.environment import Environment
from pipediag.records.files import load_json
from pipediag.records.header import READABLE_VERSIONS, SCHEMA_VERSION, created_now, run_header, run_header_fields
from pipediag.records.kinds import Status
from pipediag.records.readings import SampleLog
from pipediag.records.run import ModeRun
from pipediag.records.service import ServerInfo, Shutdown
from pipediag.records.stage import Stage
from pipediag.records.step import StepInfo

KIND = "scale"
LOCAL_MODES = ("synthetic", "local_input_only", "transfer")


def _mode_to_dict(summary: ModeSummary | None, run: ModeRun | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    d = summary.to_dict()
    d["run"] = None if run is None else run.to_dict()
    return d


def _mode_from_dict(d: dict[str, Any] | None) -> tuple[ModeSummary | None, ModeRun | None]:
    if d is None:
        return None, None
    run = d.get("run")
    return summary_from_dict({k: v for k, v in d.items() if k != "run"}), None if run is None else ModeRun.from_dict(run)


@dataclass(frozen=True)
class CountResult:
    """One worker count: the pipeline through the service alone, and feeding the step."""

    workers: int | None  # None: a remote deployment of unknown size
    placement: str  # own_cores | shares_client_cores | oversubscribed | unpinned | remote
    input_only: ModeSummary | None
    fed: ModeSummary | None
    input_only_run: ModeRun | None = None
    fed_run: ModeRun | None = None
    worker_cpu_pct: tuple[float, ...] | None = None  # per worker over the input-only mode; 100 = one core
    worker_cpu_reason: str | None = None  # why worker_cpu_pct is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "placement": self.placement,
            "input_only": _mode_to_dict(self.input_only, self.input_only_run),
            "fed": _mode_to_dict(self.fed, self.fed_run),
            "worker_cpu_pct": None if self.worker_cpu_pct is None else list(self.worker_cpu_pct),
            "worker_cpu_reason": self.worker_cpu_reason,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CountResult:
        input_only, input_run = _mode_from_dict(d.get("input_only"))
        fed, fed_run = _mode_from_dict(d.get("fed"))
        cpu = d.get("worker_cpu_pct")
        return cls(workers=d.get("workers"), placement=d["placement"], input_only=input_only, fed=fed,
                   input_only_run=input_run, fed_run=fed_run, worker_cpu_pct=None if cpu is None else tuple(cpu),
                   worker_cpu_reason=d.get("worker_cpu_reason"))


@dataclass(frozen=True)
class ServiceInfo:
    kind: str  # local (pipediag started it) | remote (--service)
    target: str  # grpc://host:port of the dispatcher
    processing_mode: str  # parallel_epochs | distributed_epoch
    servers: tuple[ServerInfo, ...] = ()  # local only
    shutdown: Shutdown | None = None  # local only

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "target": self.target,
            "processing_mode": self.processing_mode,
            "servers": [s.to_dict() for s in self.servers],
            "shutdown": None if self.shutdown is None else self.shutdown.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ServiceInfo:
        shutdown = d.get("shutdown")
        return cls(kind=d["kind"], target=d["target"], processing_mode=d["processing_mode"],
                   servers=tuple(ServerInfo.from_dict(s) for s in d.get("servers", ())),
                   shutdown=None if shutdown is None else Shutdown.from_dict(shutdown))


@dataclass(frozen=True)
class ScaleResult:
    status: Status  # "failed": a server died or the user's code raised mid-run
    target: str
    step: StepInfo | None
    environment: Environment
    element: ElementInfo | None
    cardinality: int | str | None
    stages: tuple[Stage, ...]
    service: ServiceInfo | None
    modes: dict[str, ModeSummary]  # synthetic, local_input_only, transfer
    runs: dict[str, ModeRun]
    counts: tuple[CountResult, ...]
    overhead: Overhead | None
    plan: CapacityPlan | None
    visitation: tuple[str, ...]
    samples: SampleLog
    settings: dict[str, Any]
    notes: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    created_at: str = field(default_factory=created_now)
    # status "failed": the error, for the command line to show after the partial report. Not in
    # the JSON (notes[0] says what failed); None after a round trip.
    error: Exception | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            **run_header(KIND, self),
            "dataset": {
                "element": None if self.element is None else self.element.to_dict(),
                "cardinality": self.cardinality,
                "stages": [s.to_dict() for s in self.stages],
            },
            "service": None if self.service is None else self.service.to_dict(),
            "modes": {name: _mode_to_dict(self.modes.get(name), self.runs.get(name)) for name in LOCAL_MODES},
            "counts": [c.to_dict() for c in self.counts],
            "overhead": None if self.overhead is None else self.overhead.to_dict(),
            "plan": None if self.plan is None else self.plan.to_dict(),
            "visitation": list(self.visitation),
            "notes": list(self.notes),
            "samples": self.samples.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ScaleResult:
        if d.get("kind") != KIND:
            raise UsageError("this file is not a pipediag scale result", "pipediag report reads both kinds of file")
        if d.get("schema_version") not in READABLE_VERSIONS:
            raise UsageError(
                f"this file has schema_version {d.get('schema_version')!r}; this pipediag reads "
                f"{READABLE_VERSIONS[0]} to {SCHEMA_VERSION}",
                "re-run pipediag scale with this version of pipediag",
            )
        modes, runs = {}, {}
        for name, m in (d.get("modes") or {}).items():
            summary, run = _mode_from_dict(m)
            if summary is not None:
                modes[name] = summary
            if run is not None:
                runs[name] = run
        dataset = d.get("dataset") or {}
        return cls(
            **run_header_fields(d, StepInfo, Environment),
            element=None if dataset.get("element") is None else ElementInfo.from_dict(dataset["element"]),
            cardinality=dataset.get("cardinality"),
            stages=tuple(Stage.from_dict(s) for s in dataset.get("stages", [])),
            service=None if d.get("service") is None else ServiceInfo.from_dict(d["service"]),
            modes=modes,
            runs=runs,
            counts=tuple(CountResult.from_dict(c) for c in d.get("counts", [])),
            overhead=None if d.get("overhead") is None else Overhead.from_dict(d["overhead"]),
            plan=None if d.get("plan") is None else CapacityPlan.from_dict(d["plan"]),
            visitation=tuple(d.get("visitation", [])),
            samples=SampleLog.from_dict(d["samples"]),
            notes=tuple(d.get("notes", [])),
        )


def read_scale_json(path: str) -> ScaleResult:
    return ScaleResult.from_dict(load_json(path))
