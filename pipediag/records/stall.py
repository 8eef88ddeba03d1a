"""A stall: the exception a guarded call raises past its deadline, and where it happened, for the report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipediag.records.kinds import FILLING, NOTHING, STOPPED, YIELDS, ProbeState
from pipediag.records.record import DictRecord


class Stalled(Exception):
    """A guarded call did not return within its deadline. `in_step`: it was inside the user's
    step (set by the runner), not waiting for the pipeline."""

    def __init__(self, what: str, waited_s: float, timeout_s: float):
        super().__init__(what, waited_s, timeout_s)
        self.what, self.waited_s, self.timeout_s = what, waited_s, timeout_s
        self.in_step = False

    def __str__(self) -> str:
        return f"{self.what}: nothing for {self.waited_s:.1f} s (the stall timeout is {self.timeout_s:g} s)"


@dataclass(frozen=True)
class PrefixReading(DictRecord):
    """One prefix of the pipeline (the stages up to `stage`) read fresh while a batch was awaited
    (modes.probe): what it gave, and for how long it was read."""

    stage: str  # the label of the stage the prefix ends with
    state: ProbeState
    elements: int = 0  # elements it yielded while read
    seconds: float = 0.0  # how long it was read (for nothing: the deadline it was given)
    fill_s: float | None = None  # filling: seconds its buffer needs at the rate of the stage before it
    reason: str | None = None  # failed: why it could not be read

    @property
    def per_s(self) -> float | None:
        return self.elements / self.seconds if self.state == YIELDS and self.seconds > 0 else None

    @property
    def text(self) -> str:
        if self.state == YIELDS:
            rate = self.per_s
            return f"{self.stage} yields" + ("" if rate is None else f" {count_text(rate)} elements/s")
        if self.state == NOTHING:
            return f"{self.stage} nothing in {self.seconds:g} s"
        if self.state == STOPPED:
            return f"{self.stage} stopped after {self.elements} elements"
        if self.state == FILLING:
            return f"{self.stage} filling its buffer (~{seconds_text(self.fill_s or 0)} s at the rate before it)"
        return f"{self.stage} could not be read: {self.reason}"


def count_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def seconds_text(value: float) -> str:
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


@dataclass(frozen=True)
class StallInfo:
    """Where a run stalled, for the report: the mode, what it was doing, how long it waited, and
    the stage that was working when it can be found (None, with `stage_reason`, when not)."""

    mode: str
    what: str
    waited_s: float
    timeout_s: float
    steps: int = 0  # timed steps of the stalled mode before it stalled
    stage: str | None = None
    stage_reason: str | None = None
    # Each stage's prefix read fresh (modes.probe), `probed_after_s` into the wait; () when not read.
    probe: tuple[PrefixReading, ...] = ()
    probed_after_s: float | None = None

    @property
    def text(self) -> str:
        where = f"; the stage that did not yield: {self.stage}" if self.stage else (
            f"; the stage is not known: {self.stage_reason}" if self.stage_reason else "")
        if self.probe and self.probed_after_s is not None:
            where += (f" (each stage read fresh after {seconds_text(self.probed_after_s)} s: "
                      + "; ".join(r.text for r in self.probe) + ")")
        return (f"stalled in {self.what}: nothing for {self.waited_s:.1f} s (stall timeout {self.timeout_s:g} s)"
                f"{where}")

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "probe": [r.to_dict() for r in self.probe]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StallInfo:
        return cls(**{**d, "probe": tuple(PrefixReading.from_dict(r) for r in d.get("probe") or ())})


class RunStalled(Exception):
    """Ends a run (diagnose, compare, sweep, scale) after a stall; carries where it happened."""

    def __init__(self, info: StallInfo):
        super().__init__(info.text)
        self.info = info
