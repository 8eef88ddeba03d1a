"""A stall: the exception a guarded call raises past its deadline, and where it happened, for the report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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

    @property
    def text(self) -> str:
        where = f"; the stage that did not yield: {self.stage}" if self.stage else (
            f"; the stage is not known: {self.stage_reason}" if self.stage_reason else "")
        return (f"stalled in {self.what}: nothing for {self.waited_s:.1f} s (stall timeout {self.timeout_s:g} s)"
                f"{where}")

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StallInfo:
        return cls(**d)


class RunStalled(Exception):
    """Ends a run (diagnose, compare, sweep, scale) after a stall; carries where it happened."""

    def __init__(self, info: StallInfo):
        super().__init__(info.text)
        self.info = info
