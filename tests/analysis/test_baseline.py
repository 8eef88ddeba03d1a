"""Comparing two machine profiles on scripted step times (no TensorFlow, no clock)."""

import random

import pytest

from pipediag.analysis.baseline import PointTimes, chunk_rates, compare_points, finding
from pipediag.api.baseline import window_for

MS = 1_000_000


def steps(mean_ms, n=60, spread=0.01, seed=0):
    rng = random.Random(seed)
    return tuple(int(mean_ms * MS * (1 + rng.uniform(-spread, spread))) for _ in range(n))


def profile(**sizes):
    """profile(b16=steps(...), b32="out_of_memory") -> {16: PointTimes, 32: PointTimes}"""
    out = {}
    for key, value in sizes.items():
        size = int(key[1:])
        out[size] = PointTimes(value, ()) if isinstance(value, str) else PointTimes("ok", value)
    return out


def test_a_profile_against_itself_is_no_difference():
    a = profile(b16=steps(10, spread=0.3), b32=steps(19, seed=1), b64=steps(37, n=8, spread=0.5, seed=2))
    c = compare_points(a, a)
    assert c.differs is False and c.verdict.startswith("no difference")
    assert all(s.finding == "same" and s.throughput_ratio == 1.0 for s in c.sizes)


def test_two_runs_of_the_same_machine_are_no_difference():
    a = profile(b16=steps(10, seed=1), b32=steps(19, seed=2))
    b = profile(b16=steps(10, seed=3), b32=steps(19, seed=4))
    c = compare_points(a, b)
    assert c.differs is False, c.verdict
    for s in c.sizes:
        assert s.throughput_low <= 1.0 <= s.throughput_high and s.finding == "same"


def test_a_slower_machine_is_named_with_its_worst_batch_size():
    a = profile(b16=steps(10, seed=1), b32=steps(19, seed=2), b64=steps(37, seed=3))
    b = profile(b16=steps(10, seed=4), b32=steps(19 / 0.88, seed=5), b64=steps(37 / 0.93, seed=6))
    c = compare_points(a, b)
    assert c.differs is True
    assert c.verdict == "B is 12% slower at batch 32"
    by_size = {s.batch_size: s for s in c.sizes}
    assert by_size[16].finding == "same" and by_size[64].finding == "slower"
    assert by_size[32].throughput_high < 1 and by_size[32].step_p50_ratio == pytest.approx(1 / 0.88, rel=0.02)
    assert by_size[32].step_p50_low > 1.0  # B's steps take longer, with confidence
    assert c.slower_than(0.05) and not c.slower_than(0.20)
    assert c.sizes[0].level == pytest.approx(1 - 0.05 / 3)  # Bonferroni over the three sizes


def test_a_faster_machine():
    c = compare_points(profile(b16=steps(10, seed=1)), profile(b16=steps(8, seed=2)))
    assert c.verdict == "B is 25% faster at batch 16" and c.differs is True and not c.slower_than(0.0)


def test_a_difference_within_the_tolerance_is_not_one():
    c = compare_points(profile(b16=steps(10, seed=1, spread=0.002)), profile(b16=steps(10.2, seed=2, spread=0.002)))
    assert c.sizes[0].throughput_high < 1.0  # a real 2% difference, shown ...
    assert c.sizes[0].finding == "same" and c.differs is False  # ... but within ±5%: equivalent
    wider = compare_points(profile(b16=steps(10, seed=1, spread=0.08)), profile(b16=steps(10.35, seed=2, spread=0.08)))
    assert wider.sizes[0].finding == "small" and wider.differs is False, wider.sizes[0]
    assert "smaller than the tolerance at batch 16" in wider.lines[0]
    strict = compare_points(profile(b16=steps(10, seed=1, spread=0.002)),
                            profile(b16=steps(10.2, seed=2, spread=0.002)), tolerance=0.01)
    assert strict.verdict == "B is 2% slower at batch 16"


def test_an_interval_too_wide_to_tell_is_inconclusive_not_no_difference():
    a = profile(b16=steps(10, n=12, spread=0.6, seed=1))
    b = profile(b16=steps(10, n=12, spread=0.6, seed=2))
    c = compare_points(a, b)
    assert c.sizes[0].finding == "unclear" and c.differs is None
    assert c.verdict.startswith("inconclusive: at batch 16 [") and "--seconds-per-size" in c.verdict


def test_different_batch_sizes_compare_the_common_ones_and_say_which_were_left_out():
    a = profile(b16=steps(10, seed=1), b32=steps(19, seed=2))
    b = profile(b32=steps(19, seed=3), b64=steps(37, seed=4))
    c = compare_points(a, b)
    assert [s.batch_size for s in c.sizes] == [32] and c.differs is False
    assert (c.only_a, c.only_b) == ((16,), (64,))
    assert "not compared (measured in one profile only): A 16; B 64" in c.lines
    none = compare_points(profile(b16=steps(10)), profile(b64=steps(37)))
    assert none.differs is None and none.verdict == "inconclusive: no batch size ran in both profiles"


def test_the_oom_edge_moving_is_a_difference():
    a = profile(b16=steps(10, seed=1), b32=steps(19, seed=2), b64=steps(37, seed=3))
    b = profile(b16=steps(10, seed=4), b32=steps(19, seed=5), b64="out_of_memory")
    c = compare_points(a, b)
    assert c.differs is True and c.verdict == "B ran out of memory at batch 64, where A ran"
    assert c.only_a == ()  # the size B could not run is the memory difference, not a size left out
    both = compare_points(b, a)
    assert both.verdict == "A ran out of memory at batch 64, where B ran"


def test_too_few_steps_for_an_interval():
    c = compare_points(profile(b16=steps(10, n=3, seed=1)), profile(b16=steps(10, n=3, seed=2)))
    assert c.sizes[0].finding == "too few steps" and c.differs is None
    assert c.verdict == "inconclusive: too few timed steps for an interval at any batch size"


def test_chunk_rates_and_findings():
    assert chunk_rates([MS] * 3) == []
    assert chunk_rates([MS] * 40) == pytest.approx([1000.0] * 10)
    assert finding(0.90, 0.85, 0.95, 0.05) == "slower"
    assert finding(0.97, 0.955, 0.99, 0.05) == "same"
    assert finding(0.97, 0.93, 0.99, 0.05) == "small"
    assert finding(1.0, 0.9, 1.1, 0.05) == "unclear"


def test_each_size_gets_a_share_of_the_budget_left():
    assert window_for(60, 0, 3, 0, 6) == 6  # plenty: the cap
    assert window_for(60, 40, 2, 5, 6) == 5  # 20 s left for 2 sizes, 5 s set-up each
    assert window_for(60, 55, 2, 2, 6) == 1.0  # the shortest window still fits
    assert window_for(60, 58, 1, 2, 6) is None  # it does not: skipped
