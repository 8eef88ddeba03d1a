"""The comparison verdict and the --fail-if-slower gate on plain intervals."""

from pipediag.analysis.compare import RatioInterval
from pipediag.verdict.compare import FASTER, INCONCLUSIVE, NO_DIFFERENCE, SLOWER, gate_text, is_clear, judge


def iv(ratio, low, high):
    return RatioInterval(ratio=ratio, low=low, high=high, rounds=6, level=0.99, confidence=0.95, method="paired",
                         log_sd=0.02, dof=5.0, effect_dz=1.0)


def test_faster_slower_and_no_difference_follow_the_interval():
    assert judge(iv(1.8, 1.7, 1.9)).verdict == FASTER
    assert judge(iv(0.9, 0.85, 0.95)).verdict == SLOWER
    assert judge(iv(1.01, 0.97, 1.05)).verdict == NO_DIFFERENCE
    faster = judge(iv(1.8, 1.7, 1.9))
    assert faster.headline == "B is faster than A: 1.800× (+80.0%; 95% CI +70.0% to +90.0%)"


def test_no_difference_says_when_the_interval_rules_out_changes_that_matter():
    tight = judge(iv(1.0, 0.97, 1.03), equivalence=0.05)
    assert tight.equivalent and tight.headline.endswith("within ±5%")
    wide = judge(iv(1.0, 0.9, 1.12), equivalence=0.05)
    assert not wide.equivalent and "within" not in wide.headline


def test_the_run_may_stop_when_the_interval_excludes_one_or_is_within_the_band():
    assert is_clear(iv(1.2, 1.1, 1.3))
    assert is_clear(iv(1.0, 0.97, 1.03), equivalence=0.05)
    assert not is_clear(iv(1.0, 0.9, 1.12), equivalence=0.05)


def test_the_gate_settles_either_way():
    assert is_clear(iv(1.0, 0.96, 1.12), equivalence=0.02, slower_limit=0.05)  # surely not 5% slower
    assert not is_clear(iv(0.97, 0.93, 1.01), equivalence=0.02, slower_limit=0.05)  # maybe 5% slower, maybe not


def test_the_gate_fails_only_when_slower_by_more_than_the_limit_with_confidence():
    assert judge(iv(0.90, 0.88, 0.92), slower_limit=0.05).regression is True
    assert judge(iv(0.96, 0.94, 0.98), slower_limit=0.05).regression is False  # slower, but maybe by less than 5%
    assert judge(iv(0.90, 0.80, 1.01), slower_limit=0.05).regression is False  # not shown to be slower
    assert judge(iv(0.90, 0.88, 0.92)).regression is None  # no gate asked for
    assert gate_text(judge(iv(0.90, 0.88, 0.92), slower_limit=0.05)).startswith("FAIL")
    assert gate_text(judge(iv(1.0, 0.98, 1.02), slower_limit=0.05)).startswith("pass")


def test_no_interval_is_inconclusive_and_never_fails_the_gate():
    v = judge(None, slower_limit=0.05, why_none="the time cap allowed only 1 round")
    assert v.verdict == INCONCLUSIVE and v.regression is False
    assert v.reason == "the time cap allowed only 1 round"
    assert "there was no verdict" in gate_text(v)
