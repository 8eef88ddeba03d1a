"""compare() end to end on real TensorFlow pipelines (small, sleep-bound, so they stay fast).

What a comparison concludes from its rounds is tested on a fake clock (tests/modes/
test_interleave.py: a faster side found at the first look; identical sides not significantly
different) and on scripted numbers (tests/verdict/test_compare.py). These real runs check
what cannot flake on a shared machine: the rounds, their order, the sides and their numbers, and
that a 4x planted gain is never called a loss. (Beside other sessions' TensorFlow on 2 cores, the
4x gain once read "no significant difference: B/A = 2.249x, 95% CI -54% to +1004%": a stalled
turn; and the self-comparison wrongly claims a difference in up to 5% of runs by design.)
"""

import pytest

pytest.importorskip("tensorflow")

import pipediag  # noqa: E402
from pipediag.analysis.compare import LookPlan  # noqa: E402
from pipediag.modes.compare import ComparePlan  # noqa: E402
from pipediag.verdict.compare import SLOWER  # noqa: E402
from tests.fixtures import pipelines as P  # noqa: E402

pytestmark = pytest.mark.slow


def test_parallel_and_serial_maps_are_compared_in_alternating_rounds():
    c = pipediag.compare(P.serial_sleep_map, P.parallel_sleep_map, step=P.light_step(),
                         plan=ComparePlan(max_seconds=30))
    assert c.verdict.verdict != SLOWER, c.verdict  # four sleeping reads at a time: never slower
    assert c.verdicts["input_only"].verdict != SLOWER
    orders = [r.order for r in c.rounds]
    assert len(orders) >= 2 and orders == (["AB", "BA"] * len(orders))[:len(orders)]
    assert c.interval.low <= c.interval.ratio <= c.interval.high
    for side in ("A", "B"):
        fed = c.sides[side]["fed"]
        assert fed.rate > 0 and fed.usage.cpu_util_pct is not None
        assert fed.usage.gpu_util_pct is None and fed.usage.gpu_util_reason
    assert c.a.stages[-1].label == "batch(16)" and "map(slow_read)" in [s.label for s in c.a.stages]


def test_a_pipeline_compared_with_itself_gives_one_consistent_interval():
    # 3 rounds, not up to 30 under a 25-s cap: identical sides rarely decide early, and the
    # interval's coverage is a property of the method, tested on a fake clock; a real run checks
    # that the numbers hang together, which 3 rounds show as well as 30.
    # Fed turns only: the input_only turns are the test above's (and would double each round here).
    c = pipediag.compare(P.serial_sleep_map, P.serial_sleep_map, step=P.light_step(),
                         plan=ComparePlan(max_seconds=25, looks=LookPlan(max_rounds=3), kinds=("fed",)))
    assert len(c.rounds) >= 2 and c.interval.low <= c.interval.ratio <= c.interval.high
    assert c.sides["A"]["fed"].rate > 0 and c.sides["B"]["fed"].rate > 0
    assert [st.label for st in c.a.stages] == [st.label for st in c.b.stages]


def test_different_batch_sizes_are_compared_in_examples_per_second():
    c = pipediag.compare(P.in_memory, P.in_memory, a_kwargs={"batch_size": 32}, b_kwargs={"batch_size": 64},
                         plan=ComparePlan(max_seconds=8, kinds=("input_only",)))
    assert c.unit == "examples" and c.a.rate_scale == 32 and c.b.rate_scale == 64
    assert any("batch sizes differ" in n for n in c.notes)
