"""What diagnose() adds to a concluded diagnosis under --quick (api.finish): no TensorFlow."""

import pytest

from pipediag.api.finish import QUICK_MAX_SECONDS, quick_modes, quick_rule
from pipediag.errors import UsageError
from pipediag.records.run import StopRule


def test_quick_shortens_every_window_of_the_default_rule():
    rule = quick_rule(StopRule())
    assert rule.max_seconds == QUICK_MAX_SECONDS == 3.0
    assert (rule.min_seconds, rule.min_steps, rule.warmup_steps, rule.decide_min_seconds) == (1.0, 10, 3, 0.5)
    assert rule.rel_half_width == StopRule().rel_half_width  # what "stable" means is unchanged


def test_quick_never_lengthens_a_shorter_rule():
    short = StopRule(max_seconds=1.0, min_seconds=0.2, min_steps=5, warmup_steps=2, decide_min_seconds=0.3)
    assert quick_rule(short) == short


def test_quick_drops_the_tuned_mode_and_refuses_thorough():
    assert quick_modes(("synthetic", "pipeline", "input_only", "tuned"), True, False) == (
        "synthetic", "pipeline", "input_only")
    assert quick_modes(("synthetic", "pipeline", "tuned"), False, False)[-1] == "tuned"
    with pytest.raises(UsageError):
        quick_modes(("synthetic", "pipeline"), True, True)
