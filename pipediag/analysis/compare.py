"""Is B faster than A? The ratio of two throughputs from interleaved rounds, with an interval
that stays honest when the run stops as soon as the answer is clear.

Pure numbers: rates in, intervals out. No TensorFlow, no clock. docs/compare.md says why the
method is this one; tests/analysis/test_compare.py checks it on simulated rounds.

- Paired rounds (A and B measured back to back, order alternating AB, BA, AB, …): the per-round
  log ratio d = ln(rate_B / rate_A) cancels whatever the machine did to both halves of a round.
  The interval is Student's t on the mean of d, turned back into a ratio with exp.
- Against a saved run (no interleaving possible): Welch's t on the log rates of the saved run's
  chunks and of B's rounds.
- The run looks at the data only at planned round counts (`LookPlan.looks`), and each look uses
  the level 1 - (1 - confidence) / K for K looks (Bonferroni). So every look's interval holds
  simultaneously with the stated confidence, and the interval reported at whichever look the run
  stopped is a valid 95% interval however the stopping was decided (the answer was clear, the time
  cap, Ctrl-C).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipediag import stats
from pipediag.records.record import DictRecord

PAIRED, UNPAIRED = "paired", "unpaired"


@dataclass(frozen=True)
class LookPlan:
    """When the data is looked at, and at what level.

    Looks at `first_look` rounds, then each look `growth` times the last, ending at `max_rounds`.
    Geometric spacing keeps the number of looks (and so the Bonferroni price) small while still
    letting a large effect stop after a handful of rounds.
    """

    max_rounds: int = 30
    first_look: int = 4
    growth: float = 1.5
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if self.max_rounds < 3:
            raise ValueError("a comparison needs max_rounds >= 3 (an interval needs at least 2 rounds)")
        if self.first_look < 2 or self.growth <= 1.0 or not 0.5 < self.confidence < 1.0:
            raise ValueError("LookPlan needs first_look >= 2, growth > 1 and 0.5 < confidence < 1")

    def looks(self) -> tuple[int, ...]:
        out = [min(self.first_look, self.max_rounds)]
        while out[-1] < self.max_rounds:
            out.append(min(self.max_rounds, max(out[-1] + 1, round(out[-1] * self.growth))))
        return tuple(out)

    @property
    def level(self) -> float:
        """The confidence of each look's interval: 1 - alpha / K."""
        return 1.0 - (1.0 - self.confidence) / len(self.looks())

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "looks": list(self.looks()), "level": self.level}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LookPlan:
        return cls(max_rounds=d["max_rounds"], first_look=d["first_look"], growth=d["growth"],
                   confidence=d["confidence"])


@dataclass(frozen=True)
class RatioInterval(DictRecord):
    """B's throughput over A's, with its interval. ratio > 1: B is faster."""

    ratio: float  # exp(mean log ratio): the geometric mean of the per-round ratios (paired)
    low: float
    high: float
    rounds: int  # rounds of B (and of A when paired) that went in
    level: float  # the confidence of this interval itself (Bonferroni-adjusted per look)
    confidence: float  # the confidence it guarantees over all looks (0.95)
    method: str  # paired | unpaired
    log_sd: float  # SD of the per-round log ratios (paired) or of the difference's terms (unpaired)
    dof: float
    effect_dz: float | None  # mean log ratio / its SD: how many "round noises" the change is

    @property
    def percent(self) -> float:
        return 100.0 * (self.ratio - 1.0)

    @property
    def excludes_one(self) -> bool:
        return self.low > 1.0 or self.high < 1.0


def _mean_sd(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    m = sum(values) / n
    var = sum((v - m) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return m, math.sqrt(var)


def _logs(rates: Sequence[float], what: str) -> list[float]:
    if any(r <= 0 or not math.isfinite(r) for r in rates):
        raise ValueError(f"{what} rates must be positive and finite")
    return [math.log(r) for r in rates]


def paired_ratio(a_rates: Sequence[float], b_rates: Sequence[float], level: float,
                 confidence: float = 0.95) -> RatioInterval | None:
    """Interval of B/A from rounds measured back to back. None below 2 rounds."""
    if len(a_rates) != len(b_rates):
        raise ValueError("paired rounds need as many A rates as B rates")
    n = len(a_rates)
    if n < 2:
        return None
    d = [lb - la for la, lb in zip(_logs(a_rates, "A"), _logs(b_rates, "B"))]
    mean, sd = _mean_sd(d)
    half = stats.t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    return RatioInterval(
        ratio=math.exp(mean), low=math.exp(mean - half), high=math.exp(mean + half), rounds=n, level=level,
        confidence=confidence, method=PAIRED, log_sd=sd, dof=float(n - 1),
        effect_dz=mean / sd if sd > 0 else None,
    )


def unpaired_ratio(a_rates: Sequence[float], b_rates: Sequence[float], level: float,
                   confidence: float = 0.95) -> RatioInterval | None:
    """Welch's interval of B/A when A and B were not measured side by side (a saved baseline).

    It covers the noise within each run, not a change of the machine between the runs.
    None unless both sides have at least 2 values.
    """
    if len(a_rates) < 2 or len(b_rates) < 2:
        return None
    la, lb = _logs(a_rates, "A"), _logs(b_rates, "B")
    (ma, sa), (mb, sb) = _mean_sd(la), _mean_sd(lb)
    va, vb = sa * sa / len(la), sb * sb / len(lb)
    se = math.sqrt(va + vb)
    mean = mb - ma
    if se == 0:
        dof = float(len(la) + len(lb) - 2)
    else:
        dof = (va + vb) ** 2 / (va * va / (len(la) - 1) + vb * vb / (len(lb) - 1))
    half = stats.t_quantile(0.5 + level / 2.0, dof) * se
    pooled = math.sqrt(((len(la) - 1) * sa * sa + (len(lb) - 1) * sb * sb) / (len(la) + len(lb) - 2))
    return RatioInterval(
        ratio=math.exp(mean), low=math.exp(mean - half), high=math.exp(mean + half), rounds=len(lb), level=level,
        confidence=confidence, method=UNPAIRED, log_sd=pooled, dof=dof,
        effect_dz=mean / pooled if pooled > 0 else None,
    )


def round_order(index: int) -> tuple[str, str]:
    """Which side goes first in round `index` (0-based): AB, BA, AB, … so that a steady drift
    (a machine warming up, a neighbour starting) favours neither side over a pair of rounds."""
    return ("A", "B") if index % 2 == 0 else ("B", "A")


class Sequential:
    """Rounds go in one at a time; it says when the answer is clear, and gives the interval.

    `clear(interval)` is the stopping question (the verdict module answers it). The real runner
    and the simulations drive this same object, so what the tests measure is what users get.
    With `baseline` (rates of a saved run's chunks), rounds carry B alone and the interval is
    unpaired.
    """

    def __init__(self, plan: LookPlan, clear: Callable[[RatioInterval], bool],
                 baseline: Sequence[float] | None = None):
        self.plan = plan
        self.clear = clear
        self.baseline = None if baseline is None else tuple(baseline)
        self.a: list[float] = []
        self.b: list[float] = []
        self._looks = set(plan.looks())
        self.looks_taken = 0
        self.last: RatioInterval | None = None

    @property
    def rounds(self) -> int:
        return len(self.b)

    def interval(self) -> RatioInterval | None:
        """The interval over every round so far, at the plan's per-look level."""
        if self.baseline is not None:
            return unpaired_ratio(self.baseline, self.b, self.plan.level, self.plan.confidence)
        return paired_ratio(self.a, self.b, self.plan.level, self.plan.confidence)

    def add(self, a_rate: float | None, b_rate: float) -> str | None:
        """Record one round. Returns why to stop (`clear`, `round_cap`), or None to go on."""
        if self.baseline is None:
            if a_rate is None:
                raise ValueError("a paired comparison needs A's rate in every round")
            self.a.append(a_rate)
        self.b.append(b_rate)
        n = len(self.b)
        if n in self._looks:
            self.looks_taken += 1
            self.last = self.interval()
            if self.last is not None and self.clear(self.last):
                return "clear"
        if n >= self.plan.max_rounds:
            return "round_cap"
        return None

    def conclude(self) -> RatioInterval | None:
        """The final interval. A run stopped between looks (time cap, Ctrl-C) spends one of the
        looks it did not get to, so the family of looks still holds at the stated confidence."""
        if self.rounds == 0:
            return None
        if self.rounds in self._looks and self.last is not None and self.last.rounds == self.rounds:
            return self.last
        if self.looks_taken >= len(self._looks):  # cannot happen: the last look is max_rounds
            raise AssertionError("no look left")
        self.looks_taken += 1
        self.last = self.interval()
        return self.last
