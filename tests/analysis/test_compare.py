"""The comparison statistics on exact numbers and on simulated rounds (pure, seeded, fast).

The simulated checks are deterministic (fixed seeds). Their tolerances are what a fresh seed
could give a method that is exactly right: 1000 comparisons of a method whose true false-claim
rate is 5% give between 3.6% and 6.4% (±2 binomial standard errors, 0.69% each), so "at most
~5%" is asserted as <= 6.4%. Power bounds sit a few points under the rates measured with
benchmarks/compare_stats.py (docs/compare.md quotes them).
"""

import math
import random

import pytest

from pipediag.analysis.compare import LookPlan, Sequential, paired_ratio, round_order, unpaired_ratio
from pipediag.analysis.simulation import SCENARIOS, Noise, claim_rate, rounds, simulate
from pipediag.verdict.compare import is_clear

RUNS = 1000
FALSE_CLAIMS_MAX = 0.05 + 2 * math.sqrt(0.05 * 0.95 / RUNS)  # 6.4%


def clear(iv):
    return is_clear(iv, equivalence=0.05)


def test_looks_are_geometric_and_end_at_the_round_cap():
    plan = LookPlan()
    assert plan.looks() == (4, 6, 9, 14, 21, 30)
    assert plan.level == pytest.approx(1 - 0.05 / 6)
    assert LookPlan(max_rounds=3).looks() == (3,)
    assert LookPlan(max_rounds=10, first_look=2, growth=2).looks() == (2, 4, 8, 10)
    with pytest.raises(ValueError):
        LookPlan(max_rounds=2)


def test_paired_ratio_is_the_geometric_mean_of_round_ratios():
    a = [100.0, 50.0, 80.0, 120.0]
    b = [110.0, 56.0, 86.0, 134.0]  # ~+10% in every round, though A's speed swings 2x
    iv = paired_ratio(a, b, level=0.95)
    expected = math.exp(sum(math.log(y / x) for x, y in zip(a, b)) / 4)
    assert iv.ratio == pytest.approx(expected)
    assert 1.0 < iv.low < iv.ratio < iv.high < 1.2
    assert iv.excludes_one and iv.method == "paired" and iv.dof == 3
    assert iv.effect_dz > 3  # the change is several times the round-to-round noise of the ratio
    assert paired_ratio([100.0], [110.0], 0.95) is None


def test_pairing_removes_what_the_machine_does_to_both_sides():
    a = [100.0, 50.0, 80.0, 120.0]
    b = [110.0, 56.0, 86.0, 134.0]
    paired = paired_ratio(a, b, 0.95)
    unpaired = unpaired_ratio(a, b, 0.95)
    assert paired.excludes_one and not unpaired.excludes_one
    assert unpaired.high / unpaired.low > 5 * (paired.high / paired.low - 1) + 1


def test_unpaired_ratio_uses_welchs_degrees_of_freedom():
    a = [10.0, 11.0, 9.0, 10.5, 9.5]
    b = [20.0, 24.0, 16.0]
    iv = unpaired_ratio(a, b, 0.95)
    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]

    def var(v):
        m = sum(v) / len(v)
        return sum((x - m) ** 2 for x in v) / (len(v) - 1)

    va, vb = var(la) / 5, var(lb) / 3
    assert iv.dof == pytest.approx((va + vb) ** 2 / (va ** 2 / 4 + vb ** 2 / 2))
    assert iv.low < 2.0 < iv.high and iv.method == "unpaired"


def test_rates_must_be_positive():
    with pytest.raises(ValueError):
        paired_ratio([1.0, 0.0], [1.0, 1.0], 0.95)


def test_round_order_alternates():
    assert [round_order(i) for i in range(4)] == [("A", "B"), ("B", "A"), ("A", "B"), ("B", "A")]


def test_sequential_looks_only_at_planned_rounds():
    seen = []
    s = Sequential(LookPlan(), lambda iv: seen.append(iv.rounds) or True)
    reasons = [s.add(100.0, 150.0 + i) for i in range(4)]
    assert reasons == [None, None, None, "clear"]
    assert seen == [4] and s.looks_taken == 1
    assert s.conclude().rounds == 4 and s.looks_taken == 1  # the stopping look is the final one


def test_sequential_stops_at_the_round_cap_and_a_cut_run_spends_a_look():
    s = Sequential(LookPlan(max_rounds=10), lambda iv: False)
    reasons = [s.add(100.0, 100.0 + (-1) ** i) for i in range(10)]
    assert reasons[-1] == "round_cap" and set(reasons[:-1]) == {None}
    cut = Sequential(LookPlan(), lambda iv: False)
    for i in range(5):
        cut.add(100.0, 100.0 + (-1) ** i)
    assert cut.looks_taken == 1
    assert cut.conclude().rounds == 5 and cut.looks_taken == 2
    assert Sequential(LookPlan(), clear).conclude() is None


def test_baseline_sequential_is_unpaired():
    s = Sequential(LookPlan(), clear, baseline=[100.0, 101.0, 99.0, 100.5, 99.5])
    for rate in (150.0, 151.0, 149.0, 150.5):
        reason = s.add(None, rate)
    assert reason == "clear" and s.last.method == "unpaired"
    assert s.last.ratio == pytest.approx(1.5, rel=0.01)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_identical_sides_claim_a_difference_at_most_about_5_percent_of_the_time(scenario):
    claims, _ = claim_rate(1.0, SCENARIOS[scenario], LookPlan(), clear, RUNS, seed=11)
    assert claims <= FALSE_CLAIMS_MAX, f"{scenario}: {claims:.3f}"


def test_peeking_without_the_look_adjustment_would_claim_too_often():
    """Why the looks are adjusted: the same rounds, looked at with a plain 95% interval at each
    look, claim differences between identical sides far more often than 5%."""
    plan = LookPlan()
    rng = random.Random(5)
    claims = 0
    for _ in range(RUNS):
        a, b = [], []
        for x, y in rounds(1.0, SCENARIOS["noisy"], rng):
            a.append(x)
            b.append(y)
            if len(a) in plan.looks():
                iv = paired_ratio(a, b, 0.95)
                if iv.excludes_one or len(a) == plan.max_rounds:
                    claims += iv.excludes_one
                    break
    assert claims / RUNS > 0.08


@pytest.mark.parametrize("scenario, power", [("quiet", 0.99), ("noisy", 0.88), ("drifting", 0.97), ("bursty", 0.6)])
@pytest.mark.parametrize("ratio", [1.10, 1 / 1.10])
def test_a_10_percent_change_is_detected(scenario, power, ratio):
    claims, _ = claim_rate(ratio, SCENARIOS[scenario], LookPlan(), clear, RUNS, seed=12)
    assert claims >= power, f"{scenario} x{ratio:.3f}: {claims:.3f}"


def test_detected_changes_point_the_right_way():
    rng = random.Random(13)
    for ratio, side in ((1.10, "faster"), (1 / 1.10, "slower")):
        for _ in range(200):
            iv = simulate(ratio, SCENARIOS["noisy"], LookPlan(), clear, rng).interval
            if iv.excludes_one:
                assert (iv.low > 1) == (side == "faster")


def test_a_large_change_stops_early():
    rng = random.Random(14)
    quiet = [simulate(1.5, SCENARIOS["quiet"], LookPlan(), clear, rng) for _ in range(200)]
    assert all(o.stop_reason == "clear" and o.interval.rounds == 4 for o in quiet)
    noisy = [simulate(1.5, SCENARIOS["noisy"], LookPlan(), clear, rng).interval.rounds for _ in range(500)]
    assert sum(n == 4 for n in noisy) / 500 > 0.6  # most at the first look
    assert sum(n <= 9 for n in noisy) / 500 > 0.95  # nearly all by the third


def test_coverage_of_the_reported_interval_holds_at_the_stopping_look():
    """The interval the run reports (wherever it stopped) holds the true ratio >= 95% of the time."""
    rng = random.Random(15)
    misses = 0
    for _ in range(RUNS):
        iv = simulate(1.07, SCENARIOS["noisy"], LookPlan(), clear, rng).interval
        misses += not (iv.low <= 1.07 <= iv.high)
    assert misses / RUNS <= FALSE_CLAIMS_MAX


def test_a_steady_trend_favours_neither_side():
    """A machine slowing down steadily: alternating the order (AB, BA) keeps it from showing up
    as a difference; always AB would hand it to A."""
    noise = Noise(segment_sd=0.01, trend_per_segment=-0.01)
    claims, _ = claim_rate(1.0, noise, LookPlan(), clear, 300, seed=16)
    assert claims <= FALSE_CLAIMS_MAX
