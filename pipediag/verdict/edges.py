"""Readings that sit on a verdict threshold: a value, its 95% interval and the line it is held to.

A rule that compares a point value with a threshold flips from run to run when the value's own
run-to-run spread crosses the line (a fed step 1.17x slower than the free one, the line at 1.15x:
`input` in one run, `compute` in the next). The verdict therefore asks of each such reading
whether its interval straddles the line; diagnose measures longer once when one does, and the
verdict then says how close it was instead of flipping silently. Pure numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Edge:
    rule: str  # the rule the reading decides, e.g. "cpu_contention"
    what: str  # the reading, in words
    value: float
    low: float | None  # its 95% interval; None where none could be formed
    high: float | None
    threshold: float
    unit: str = "x"

    @property
    def above(self) -> bool:
        return self.value >= self.threshold

    @property
    def straddles(self) -> bool:
        """The interval reaches both sides of the line: another run could fall on either."""
        return self.low is not None and self.high is not None and self.low < self.threshold <= self.high

    def text(self) -> str:
        interval = "" if self.low is None or self.high is None else f" (95%: {self.low:.2f}-{self.high:.2f}{self.unit})"
        side = "above" if self.above else "below"
        return (f"{self.what} {self.value:.2f}{self.unit}{interval}, {side} the {self.threshold:.2f}{self.unit} line "
                f"by {abs(self.value / self.threshold - 1) * 100:.0f}%")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "straddles": self.straddles}


def ratio_interval(a: float | None, a_ci: tuple[float, float] | None, b: float | None,
                   b_ci: tuple[float, float] | None) -> tuple[float, float | None, float | None] | None:
    """a / b with the interval from the far ends of the two intervals (as analysis.modes.ratio_of)."""
    if not a or not b:
        return None
    if a_ci is None or b_ci is None or b_ci[0] <= 0:
        return a / b, None, None
    return a / b, a_ci[0] / b_ci[1], a_ci[1] / b_ci[0]


def straddling(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The edges a verdict's facts list whose interval straddles their line."""
    return [e for e in facts.get("edges", ()) if e.get("straddles")]
