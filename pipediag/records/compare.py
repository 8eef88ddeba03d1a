"""The rounds of a comparison as recorded: each side's timed segment and each round's pair."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipediag.records.run import ModeRun


@dataclass(frozen=True)
class Segment:
    side: str
    kind: str  # fed | input_only
    round: int  # 0-based; -1 for the probe (the side's first turn, never in the statistics)
    run: ModeRun

    @property
    def batches_per_sec(self) -> float | None:
        total = sum(self.run.step_ns)
        return self.run.steps / (total / 1e9) if self.run.steps and total > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"side": self.side, "kind": self.kind, "round": self.round, "run": self.run.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Segment:
        return cls(d["side"], d["kind"], d["round"], ModeRun.from_dict(d["run"]))


@dataclass(frozen=True)
class Round:
    index: int
    order: str  # "AB", "BA", or "B" against a saved baseline
    rates: dict[str, dict[str, float]]  # kind -> side -> rate in the comparison's unit (batches/s, or examples/s)
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "order": self.order, "rates": self.rates, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Round:
        return cls(d["index"], d["order"], {k: dict(v) for k, v in d["rates"].items()}, d["seconds"])
