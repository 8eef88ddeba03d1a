"""A mode's run as recorded: its stop rule, its timed steps and waits, and the error that ended it, if any."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipediag.oom import framework_of
from pipediag.records.kinds import StopReason
from pipediag.records.memory import FrameworkMemory


@dataclass(frozen=True)
class StopRule:
    """When a mode has measured enough.

    A mode stops when the 95% interval of the median step time is within ±`rel_half_width` and
    that of the mean (which sets throughput) within ±`mean_rel_half_width`, after at least
    `min_steps` steps and `min_seconds`; or when `max_seconds` or `max_steps` is reached. The mean
    gets a wider tolerance because shared machines drift over seconds (on the 2-core development
    machine, 1-second means of one constant step alternated between 9.5 and 11.3 ms): a ±5%
    mean would run every mode to its cap and buy nothing the verdict's own intervals do not
    already account for. Warm-up steps come first and are never part of the estimate.

    A mode given a `decided` condition (diagnose's pipeline and input_only modes, compared as they
    run with synthetic mode: verdict.sequential) may also stop once it holds, after
    `decide_min_seconds` and `decide_min_steps` (or `min_steps`, the fewer): the verdict needs its
    readings clear of its lines, not each mode's own estimate pinned down; with fewer steps their
    intervals are wider (fewer batch means, a larger t), so a reading decides early only when it is
    far from its lines. A rule with `soft_max_seconds` (--quick) also stops a
    mode there once it has `min_steps`. A `rate_only` rule (a run whose rate is all that is read
    of it) is also stable once the mean's interval alone is within ±`rel_half_width`.
    """

    max_seconds: float = 10.0
    min_seconds: float = 2.0
    min_steps: int = 20
    max_steps: int = 100_000
    warmup_steps: int = 5
    warmup_max_seconds: float = 30.0  # a first-epoch cache fill may need longer than a few steps
    rel_half_width: float = 0.05
    mean_rel_half_width: float = 0.10
    # 0.5 s since 2026-12-07, as --quick's (api.finish), from 0.75: replayed on the step times of 375
    # saved pipeline and input_only runs that stopped decided (accuracy runs 40-45, two timing runs),
    # the same test from 0.5 s put every reading on the side the whole window did, and stopped
    # 0.20 s sooner a run (benchmarks/decide_floor_replay.py; from 0.75 s it found the stops as run).
    decide_min_seconds: float = 0.5
    # A decision may come after this many timed steps (20 steps of a 0.43-s pipeline were 9 s of
    # each mode, whose slowdown read 29x against a 1.15x line). Pipeline mode's own test needs 12:
    # the wait share over the window's second half needs 3 batch means of 2 steps.
    decide_min_steps: int = 10
    # --quick's cap: a mode that has timed min_steps stops here; one slower than that runs on, to
    # max_seconds at most, until it has (a 1-batch/s pipeline would otherwise give 3 steps).
    soft_max_seconds: float | None = None
    # A run read only for its rate (the ablation's short runs: tuner.ablation.alone_rule) may
    # also stop once the mean's interval alone is within ±rel_half_width: the median's interval
    # stays wide on a fed step that alternates between a ready batch and a wait, and kept such runs
    # to their cap with their rate pinned to ±1% (small_files_latency, 2026-12-07).
    rate_only: bool = False

    @property
    def usual_seconds(self) -> float:
        """The window a mode of ordinary speed gets: the soft cap where there is one."""
        return self.max_seconds if self.soft_max_seconds is None else min(self.soft_max_seconds, self.max_seconds)

    def __post_init__(self) -> None:
        if self.max_seconds <= 0 or self.min_steps < 1 or self.rel_half_width <= 0:
            raise ValueError("StopRule needs max_seconds > 0, min_steps >= 1, rel_half_width > 0")


@dataclass(frozen=True)
class ErrorInfo:
    type: str
    message: str
    framework: str

    @classmethod
    def from_exception(cls, error: BaseException) -> ErrorInfo:
        return cls(type=type(error).__name__, message=str(error).strip()[:2000], framework=framework_of(error))


@dataclass(frozen=True)
class ModeRun:
    """The raw timings of one mode. Times are nanoseconds on the run's clock."""

    name: str
    start_ns: int  # start of the timed window (after warm-up)
    end_ns: int
    wait_ns: tuple[int, ...]  # per timed step: waiting for the batch
    compute_ns: tuple[int, ...]  # per timed step: inside step(), until the result was ready
    first_step_ns: int | None  # the very first step: tracing and compiling included
    warmup_steps: int
    warmup_ns: int
    stop_reason: StopReason
    error: ErrorInfo | None = None
    notes: tuple[str, ...] = ()
    device_memory: FrameworkMemory | None = None  # the framework's own peak over the mode, when it tells
    # Lag-1 overlap only (empty for a step timed synchronously): per timed step, the time taken
    # to fetch the batch and the time then spent waiting for the previous step's device work.
    fetch_ns: tuple[int, ...] = ()
    block_ns: tuple[int, ...] = ()
    hideable_ns: int | None = None  # the device work a fetch could hide behind (see Overlapped)
    # The first timed step of each batch shape not seen before in this mode (a retrace per new
    # input shape: a finite epoch's short last batch), kept out of wait_ns/compute_ns like the
    # first step; see run_mode and MAX_NEW_SHAPE_STEPS.
    new_shape_steps_ns: tuple[int, ...] = ()

    @property
    def overlapped(self) -> bool:
        return bool(self.fetch_ns)

    @property
    def steps(self) -> int:
        return len(self.wait_ns)

    @property
    def step_ns(self) -> tuple[int, ...]:
        return tuple(w + c for w, c in zip(self.wait_ns, self.compute_ns))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "wait_ns": list(self.wait_ns),
            "compute_ns": list(self.compute_ns),
            "first_step_ns": self.first_step_ns,
            "warmup_steps": self.warmup_steps,
            "warmup_ns": self.warmup_ns,
            "stop_reason": self.stop_reason,
            "error": None if self.error is None else vars(self.error).copy(),
            "notes": list(self.notes),
            "device_memory": None if self.device_memory is None else self.device_memory.to_dict(),
            "fetch_ns": list(self.fetch_ns),
            "block_ns": list(self.block_ns),
            "hideable_ns": self.hideable_ns,
            "new_shape_steps_ns": list(self.new_shape_steps_ns),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModeRun:
        return cls(
            name=d["name"],
            start_ns=d["start_ns"],
            end_ns=d["end_ns"],
            wait_ns=tuple(d["wait_ns"]),
            compute_ns=tuple(d["compute_ns"]),
            first_step_ns=d.get("first_step_ns"),
            warmup_steps=d.get("warmup_steps", 0),
            warmup_ns=d.get("warmup_ns", 0),
            stop_reason=d["stop_reason"],
            error=None if d.get("error") is None else ErrorInfo(**d["error"]),
            notes=tuple(d.get("notes", ())),
            device_memory=None if d.get("device_memory") is None else FrameworkMemory.from_dict(d["device_memory"]),
            fetch_ns=tuple(d.get("fetch_ns", ())),
            block_ns=tuple(d.get("block_ns", ())),
            hideable_ns=d.get("hideable_ns"),
            new_shape_steps_ns=tuple(d.get("new_shape_steps_ns", ())),
        )
