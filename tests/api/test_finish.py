"""What diagnose() adds to a concluded diagnosis under --quick (api.finish): no TensorFlow."""

from dataclasses import replace

import pytest

from pipediag.api.finish import QUICK_MAX_SECONDS, quick_modes, quick_rule
from pipediag.errors import UsageError
from pipediag.records.run import StopRule


def test_quick_shortens_every_window_of_the_default_rule():
    rule = quick_rule(StopRule())
    assert rule.usual_seconds == rule.soft_max_seconds == QUICK_MAX_SECONDS == 3.0
    assert rule.max_seconds == StopRule().max_seconds  # a mode slower than 10 steps in 3 s runs on
    assert (rule.min_seconds, rule.min_steps, rule.warmup_steps, rule.decide_min_seconds) == (1.0, 10, 3, 0.5)
    assert rule.rel_half_width == StopRule().rel_half_width  # what "stable" means is unchanged


def test_quick_never_lengthens_a_shorter_rule():
    short = StopRule(max_seconds=1.0, min_seconds=0.2, min_steps=5, warmup_steps=2, decide_min_seconds=0.3)
    assert quick_rule(short) == replace(short, soft_max_seconds=1.0)
    assert quick_rule(short).usual_seconds == 1.0


def test_the_quick_note_names_the_window_and_the_longer_one_for_slow_modes():
    from pipediag.api.finish import _window

    assert _window(quick_rule(StopRule())) == "3 s (longer, up to 10 s, for a mode with fewer than 10 steps by then)"
    assert _window(quick_rule(StopRule(max_seconds=1.0))) == "1 s"


def test_a_mode_measured_again_gets_twice_the_quick_window_as_a_hard_cap():
    from pipediag.modes.runner import longer

    again = longer(quick_rule(StopRule()))
    assert (again.max_seconds, again.soft_max_seconds, again.usual_seconds) == (6.0, None, 6.0)


def test_quick_drops_the_tuned_mode_and_refuses_thorough():
    assert quick_modes(("synthetic", "pipeline", "input_only", "tuned"), True, False) == (
        "synthetic", "pipeline", "input_only")
    assert quick_modes(("synthetic", "pipeline", "tuned"), False, False)[-1] == "tuned"
    with pytest.raises(UsageError):
        quick_modes(("synthetic", "pipeline"), True, True)
