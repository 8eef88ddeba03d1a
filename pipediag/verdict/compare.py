"""The comparison's verdict: is B faster than A, slower, or not significantly different — and
does it fail a `--fail-if-slower` gate. Plain numbers in (a RatioInterval), words out.

B is the change and A the baseline: every ratio is B's throughput over A's.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.analysis.compare import RatioInterval
from pipediag.records.record import DictRecord

FASTER, SLOWER, NO_DIFFERENCE, INCONCLUSIVE = "faster", "slower", "no_significant_difference", "inconclusive"
VERDICTS = (FASTER, SLOWER, NO_DIFFERENCE, INCONCLUSIVE)

# A run may stop early once its interval lies inside B/A = 1 ± this: "no difference that matters".
# 5% is about the run-to-run spread of one timing on a shared machine, the precision most people
# ask of "did it help?"; --equivalence changes it. It never makes the test claim a difference.
DEFAULT_EQUIVALENCE = 0.05


@dataclass(frozen=True)
class ComparisonVerdict(DictRecord):
    verdict: str  # faster | slower | no_significant_difference | inconclusive
    headline: str
    equivalent: bool  # the interval lies within 1 ± equivalence
    regression: bool | None  # --fail-if-slower P: B slower than A by more than P, with confidence
    slower_limit: float | None  # P as a fraction (0.05), when a gate was asked for
    reason: str | None = None  # inconclusive: why


def _signed(ratio: float) -> str:
    return f"{100.0 * (ratio - 1.0):+.1f}%"


def interval_text(iv: RatioInterval) -> str:
    return f"{iv.ratio:.3f}× ({_signed(iv.ratio)}; {100 * iv.confidence:.0f}% CI {_signed(iv.low)} to {_signed(iv.high)})"


def within(iv: RatioInterval, equivalence: float) -> bool:
    return iv.low >= 1.0 - equivalence and iv.high <= 1.0 + equivalence


def is_clear(iv: RatioInterval, equivalence: float = DEFAULT_EQUIVALENCE, slower_limit: float | None = None) -> bool:
    """May the run stop here? When the interval excludes 1 (a difference), lies within the
    equivalence band (no difference that matters), or settles the gate either way."""
    if iv.excludes_one or within(iv, equivalence):
        return True
    if slower_limit is not None:
        threshold = 1.0 - slower_limit
        return iv.low > threshold or iv.high < threshold
    return False


def judge(iv: RatioInterval | None, equivalence: float = DEFAULT_EQUIVALENCE, slower_limit: float | None = None,
          why_none: str = "too few rounds for an interval") -> ComparisonVerdict:
    if iv is None:
        return ComparisonVerdict(INCONCLUSIVE, f"no verdict: {why_none}", False,
                                 None if slower_limit is None else False, slower_limit, why_none)
    regression = None if slower_limit is None else iv.high < 1.0 - slower_limit
    equivalent = within(iv, equivalence)
    if iv.low > 1.0:
        verdict, headline = FASTER, f"B is faster than A: {interval_text(iv)}"
    elif iv.high < 1.0:
        verdict, headline = SLOWER, f"B is slower than A: {interval_text(iv)}"
    else:
        verdict = NO_DIFFERENCE
        headline = f"no significant difference: B/A = {interval_text(iv)}"
        if equivalent:
            headline += f", within ±{100 * equivalence:.0f}%"
    return ComparisonVerdict(verdict, headline, equivalent, regression, slower_limit)


def gate_text(v: ComparisonVerdict) -> str | None:
    if v.slower_limit is None:
        return None
    limit = f"{100 * v.slower_limit:g}%"
    if v.regression:
        return f"FAIL: B is slower than A by more than {limit}, with confidence (--fail-if-slower {limit})"
    if v.verdict == INCONCLUSIVE:
        return f"pass (not proven slower by more than {limit}: there was no verdict at all)"
    return f"pass: B is not shown to be slower than A by more than {limit}"
