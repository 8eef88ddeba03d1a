"""The result of a baseline run: the machine's profile, with its JSON round trip, and two profiles compared."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipediag.analysis.baseline import PointTimes, ProfileComparison, compare_points
from pipediag.analysis.gpu import PeakMemory
from pipediag.analysis.sweep import OomEdge
from pipediag.errors import UsageError
from pipediag.records.environment import Environment
from pipediag.records.header import READABLE_VERSIONS, SCHEMA_VERSION, created_now, file_header, header_fields
from pipediag.records.kinds import INTERRUPTED, OK, OUT_OF_MEMORY, SKIPPED, PointStatus, Status, StopReason  # noqa: F401 (re-exported: results.baseline.OK ...)
from pipediag.records.record import with_tuples
from pipediag.records.run import ErrorInfo

KIND = "baseline"
# What a profile written before the precision option reads as: that pipediag always built its reference
# model under Keras's default policy, float32 (the CLI in a fresh process; a library caller could have
# set another global policy first, which nothing recorded).
PRECISION_BEFORE_THE_OPTION = "float32"




@dataclass(frozen=True)
class BaselinePoint:
    batch_size: int
    status: PointStatus  # not "stalled"
    samples_per_sec: float | None = None  # steps x batch size / time: what an epoch would see
    samples_per_sec_ci: tuple[float, float] | None = None  # 95%, batch means of the step times
    step_ms_p50: float | None = None
    step_ms_p50_ci: tuple[float, float] | None = None  # 95%, order statistics
    step_ms_p90: float | None = None
    step_ns: tuple[int, ...] = ()  # every timed step, for comparing profiles
    first_step_ms: float | None = None  # tracing and compiling: never in the numbers above
    warmup_s: float | None = None  # first step and warm-up steps, before the timed window
    window_s: float | None = None  # the timed window's cap
    stop_reason: StopReason | None = None
    peak_memory: PeakMemory | None = None  # the framework's own peak (or NVML's reading of this process)
    peak_memory_reason: str | None = None  # why peak_memory is None
    rss_max_bytes: int | None = None  # host memory of this process (what a CPU run holds)
    gpu_util_pct: float | None = None  # NVML: a kernel ran during the sample period
    gpu_util_reason: str | None = None
    gpm_sm_active_pct: float | None = None  # GPM: share of SMs with work resident
    power_w_mean: float | None = None
    error: ErrorInfo | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size, "status": self.status, "samples_per_sec": self.samples_per_sec,
            "samples_per_sec_ci": self.samples_per_sec_ci, "step_ms_p50": self.step_ms_p50,
            "step_ms_p50_ci": self.step_ms_p50_ci, "step_ms_p90": self.step_ms_p90, "step_ns": list(self.step_ns),
            "first_step_ms": self.first_step_ms, "warmup_s": self.warmup_s, "window_s": self.window_s,
            "stop_reason": self.stop_reason,
            "peak_memory": None if self.peak_memory is None else self.peak_memory.to_dict(),
            "peak_memory_reason": self.peak_memory_reason, "rss_max_bytes": self.rss_max_bytes,
            "gpu_util_pct": self.gpu_util_pct, "gpu_util_reason": self.gpu_util_reason,
            "gpm_sm_active_pct": self.gpm_sm_active_pct, "power_w_mean": self.power_w_mean,
            "error": None if self.error is None else vars(self.error).copy(), "note": self.note,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BaselinePoint:
        d = with_tuples(d, ("samples_per_sec_ci", "step_ms_p50_ci"))
        d["step_ns"] = tuple(d.get("step_ns", ()))
        if d.get("peak_memory") is not None:
            d["peak_memory"] = PeakMemory(**d["peak_memory"])
        if d.get("error") is not None:
            d["error"] = ErrorInfo(**d["error"])
        return cls(**d)

    def times(self) -> PointTimes:
        return PointTimes(self.status, self.step_ns)


@dataclass(frozen=True)
class BaselineProfile:
    status: Status  # complete | interrupted
    model: str  # a key of MODELS
    model_description: str
    model_reason: str  # why this model (the GPU the Keras backend has, or the user's choice)
    backend: str  # the Keras backend: tensorflow | jax | torch
    device: str  # where the Keras backend runs: "gpu" or "cpu"
    parameters: int | None
    environment: Environment
    points: tuple[BaselinePoint, ...]
    oom_edge: OomEdge
    settings: dict[str, Any]
    notes: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    created_at: str = field(default_factory=created_now)
    precision: str = "float32"  # the Keras dtype policy the model was built under: float32 | mixed_float16 | mixed_bfloat16

    def to_dict(self) -> dict[str, Any]:
        return {
            **file_header(KIND, self),
            "model": self.model, "model_description": self.model_description, "model_reason": self.model_reason,
            "backend": self.backend, "device": self.device, "precision": self.precision, "parameters": self.parameters,
            "environment": self.environment.to_dict(), "settings": dict(self.settings),
            "points": [p.to_dict() for p in self.points], "oom_edge": self.oom_edge.to_dict(),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BaselineProfile:
        if d.get("kind") != KIND:
            raise UsageError(f"not a baseline profile (kind {d.get('kind')!r})",
                             "give a file written by 'pipediag baseline --json FILE'")
        if d.get("schema_version") not in READABLE_VERSIONS:
            raise UsageError(f"this profile has schema_version {d.get('schema_version')!r}; this pipediag reads "
                             f"{READABLE_VERSIONS[0]} to {SCHEMA_VERSION}",
                             "re-run 'pipediag baseline' with this version of pipediag")
        return cls(
            **header_fields(d), model=d["model"], model_description=d["model_description"],
            model_reason=d["model_reason"], backend=d["backend"], device=d["device"], parameters=d.get("parameters"),
            precision=d.get("precision", PRECISION_BEFORE_THE_OPTION),
            environment=Environment.from_dict(d["environment"]),
            points=tuple(BaselinePoint.from_dict(p) for p in d["points"]),
            oom_edge=OomEdge.from_dict(d["oom_edge"]), settings=dict(d.get("settings", {})),
            notes=tuple(d.get("notes", ())),
        )


def is_baseline(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == KIND


def compare_profiles(a: BaselineProfile, b: BaselineProfile, tolerance: float = 0.05) -> ProfileComparison:
    """B against A, batch size by batch size (see analysis/baseline.py). Two profiles of different
    models measure different things: refused. Two precisions of one model compare (what mixed
    precision gains is a question worth asking), but the difference is said first."""
    if a.model != b.model:
        raise UsageError(f"the profiles ran different models ({a.model} vs {b.model}): their numbers do not compare",
                         f"profile both machines with the same model, e.g. 'pipediag baseline --model {a.model}'")
    context = [] if a.precision == b.precision else [
        f"precision: {a.precision} vs {b.precision} (the ratios measure the precision change as well as the machines)"]
    context += [f"{name}: {x} vs {y}" for name, x, y in (("Keras backend", a.backend, b.backend),
                                                           ("device", a.device, b.device)) if x != y]
    context += a.environment.differences(b.environment)
    return compare_points({p.batch_size: p.times() for p in a.points}, {p.batch_size: p.times() for p in b.points},
                          tolerance=tolerance, context=tuple(context))
