"""compare() end to end on real TensorFlow pipelines (small, sleep-bound, so they stay fast).

The self-comparison is a statistical check on real timings: by design it wrongly claims a
difference in at most 5% of runs (about 2% measured on simulated drift, docs/compare.md), so it
can fail by chance about once in fifty runs; a failure every time would mean a bias.
"""

import pytest

pytest.importorskip("tensorflow")

import pipediag  # noqa: E402
from pipediag.modes.interleave import ComparePlan  # noqa: E402
from pipediag.verdict.comparison import FASTER, NO_DIFFERENCE  # noqa: E402
from tests.fixtures import pipelines as P  # noqa: E402

pytestmark = pytest.mark.slow


def test_parallel_map_is_found_faster_than_serial():
    c = pipediag.compare(P.serial_sleep_map, P.parallel_sleep_map, step=P.light_step(),
                         plan=ComparePlan(max_seconds=30))
    assert c.verdict.verdict == FASTER, c.verdict
    assert c.interval.low > 1.5  # four sleeping reads at a time: far faster
    assert c.verdicts["input_only"].verdict == FASTER
    assert c.stop_reason == "clear" and len(c.rounds) == 4  # settled at the first look
    assert [r.order for r in c.rounds] == ["AB", "BA", "AB", "BA"]
    for side in ("A", "B"):
        fed = c.sides[side]["fed"]
        assert fed.rate > 0 and fed.usage.cpu_util_pct is not None
        assert fed.usage.gpu_util_pct is None and fed.usage.gpu_util_reason
    assert c.sides["B"]["fed"].rate > 1.5 * c.sides["A"]["fed"].rate
    assert c.a.stages[-1].label == "batch(16)" and "map(slow_read)" in [s.label for s in c.a.stages]


def test_a_pipeline_compared_with_itself_is_not_significantly_different():
    c = pipediag.compare(P.serial_sleep_map, P.serial_sleep_map, step=P.light_step(),
                         plan=ComparePlan(max_seconds=25))
    assert c.verdict.verdict == NO_DIFFERENCE, c.verdict
    assert c.interval.low < 1.0 < c.interval.high


def test_different_batch_sizes_are_compared_in_examples_per_second():
    c = pipediag.compare(P.in_memory, P.in_memory, a_kwargs={"batch_size": 32}, b_kwargs={"batch_size": 64},
                         plan=ComparePlan(max_seconds=8, kinds=("input_only",)))
    assert c.unit == "examples" and c.a.rate_scale == 32 and c.b.rate_scale == 64
    assert any("batch sizes differ" in n for n in c.notes)
