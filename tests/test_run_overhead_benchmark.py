"""benchmarks/run_overhead.py's arithmetic on scripted numbers: the arms' order, the ratios and the
goal each step size is held to (no TensorFlow, nothing timed)."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("run_overhead", os.path.join(ROOT, "benchmarks", "run_overhead.py"))
run_overhead = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_overhead)


def test_each_arm_goes_first_and_last_equally_often_and_before_each_other_as_often_as_after():
    two = [run_overhead.arm_order(("a", "b"), r) for r in range(4)]
    assert two == [("a", "b"), ("b", "a"), ("b", "a"), ("a", "b")]
    three = [run_overhead.arm_order(("a", "b", "c"), r) for r in range(6)]
    assert all(sorted(o) == ["a", "b", "c"] for o in three)
    assert {arm: [o[0] for o in three].count(arm) for arm in "abc"} == {"a": 2, "b": 2, "c": 2}
    assert {arm: [o[-1] for o in three].count(arm) for arm in "abc"} == {"a": 2, "b": 2, "c": 2}
    for x, y in (("a", "b"), ("a", "c"), ("b", "c")):
        assert sum(o.index(x) < o.index(y) for o in three) == 3


def test_ratios_pair_the_arms_round_by_round():
    rates = {"with": [99.0, 200.0, 50.0], "without": [100.0, 200.0, 40.0]}
    s = run_overhead.summarize(rates)
    assert s["per_round"] == [0.99, 1.0, 1.25]
    assert (s["median"], s["min"], s["max"]) == (1.0, 0.99, 1.25)
    assert s["pooled"] == pytest.approx(349 / 340)
    assert s["median_ci95"] is None  # under 6 rounds
    eight = run_overhead.summarize({"with": [float(x) for x in range(1, 9)], "without": [1.0] * 8})
    assert eight["median"] == 4.5 and eight["median_ci95"] == (1.0, 7.0)  # pipediag.stats.median_ci's ranks
    with pytest.raises(ValueError):
        run_overhead.summarize({"with": [1.0], "without": []})


def test_the_goal_is_one_percent_from_5_ms_and_five_below():
    assert run_overhead.goal_ratio(20.0) == 0.99
    assert run_overhead.goal_ratio(5.0) == 0.99
    assert run_overhead.goal_ratio(4.9) == 0.95
    assert run_overhead.goal_ratio(0.8) == 0.95
    assert run_overhead.verdict(6.0, 0.989) == {"goal_ratio": 0.99, "meets": False}
    assert run_overhead.verdict(1.0, 0.96) == {"goal_ratio": 0.95, "meets": True}
