"""Issue 13's verdict misses on scripted numbers: a wait that costs no throughput, and contention
blamed on a pipeline that barely ran (docs/verdict.md, rule 3)."""

import pytest

from pipediag.analysis.modes import rate_ratio
from pipediag.verdict import thresholds as T
from pipediag.verdict.contention import pipeline_cpu_at_fed_rate
from pipediag.verdict.rules import decide, wait_without_slowdown
from tests.summaries import summary


def modes(synthetic, pipeline, input_only=None):
    return {"synthetic": synthetic, "pipeline": pipeline, "input_only": input_only, "tuned": None}


# -- 1. waiting without a slowdown ------------------------------------------------------------

def test_a_wait_at_the_free_rate_with_fast_input_is_not_input_bound():
    # real/kerasio_timeseries: 10% waiting, fed at 0.99x the free rate, input alone 3.8x.
    v = decide(modes(summary("synthetic", 50), summary("pipeline", 50.5, wait=0.10), summary("input_only", 190)))
    assert v.bottleneck == "compute"
    assert v.facts["wait_costs_no_throughput"] is True
    assert any("the wait cost no throughput" in e and "3.8x the free step" in e for e in v.evidence)


@pytest.mark.parametrize("wait", [T.INPUT_WAIT_MODERATE + 0.01, 0.12, T.INPUT_WAIT_HIGH + 0.05])
def test_the_same_wait_with_a_measured_slowdown_stays_input(wait):
    v = decide(modes(summary("synthetic", 50), summary("pipeline", 50 * (1 - wait), wait=wait),
                     summary("input_only", 190)))
    assert v.bottleneck == "input"
    assert "wait_costs_no_throughput" not in v.facts


def test_a_wait_at_the_free_rate_stays_input_when_input_alone_is_not_clearly_faster():
    # Input alone barely above the step: a wait may be the pipeline just keeping up.
    for input_rate in (55.0, 60.0):  # 1.1x and 1.2x: under the 1.3x headroom line
        v = decide(modes(summary("synthetic", 50), summary("pipeline", 50, wait=0.10), summary("input_only", input_rate)))
        assert v.bottleneck == "input", input_rate


def test_input_alone_whose_interval_reaches_one_does_not_exempt_a_wait():
    wide = summary("input_only", 70, rel_ci=0.4)  # 1.4x, but its interval reaches below the free rate
    v = decide(modes(summary("synthetic", 50), summary("pipeline", 50, wait=0.10), wide))
    assert v.bottleneck == "input"


def test_without_intervals_the_waiting_rules_apply_as_before():
    gap = rate_ratio(summary("synthetic", 50), summary("pipeline", 50))
    headroom = rate_ratio(summary("input_only", 190), summary("synthetic", 50))
    assert wait_without_slowdown(0.1, gap, headroom) is not None
    unknown = type(gap)(gap.value, None, None)
    assert wait_without_slowdown(0.1, unknown, headroom) is None
    assert wait_without_slowdown(0.1, gap, None) is None


# -- 3. contention blamed on a pipeline that barely runs ---------------------------------------

def contended(input_only):
    """The step 1.25x slower beside the pipeline, both cores busy (others 1.0 core): contention
    by the old rule. The step alone uses one core."""
    synthetic = summary("synthetic", 10, compute_ms=100.0, per_core=[60, 45], process=100.0)
    pipeline = summary("pipeline", 8, wait=0.0, compute_ms=125.0, per_core=[100, 100], process=100.0)
    return decide(modes(synthetic, pipeline, input_only))


def test_contention_is_not_blamed_on_a_pipeline_that_barely_runs():
    # real/kerasio_text_from_scratch: the pipeline alone ~400x faster than the fed step.
    v = contended(summary("input_only", 3200, per_core=[80, 70], process=150.0))
    assert v.bottleneck == "compute" and v.confidence == "low"
    assert v.facts["pipeline_cores_at_fed_rate"] == pytest.approx(1.5 * 8 / 3200)
    text = next(e for e in v.evidence if "the pipeline barely ran" in e)
    assert "0.004 cores at the fed rate" in text and "not input" in text


def test_contention_stands_when_the_pipeline_needs_real_cpu_at_the_fed_rate():
    v = contended(summary("input_only", 20, per_core=[95, 90], process=180.0))  # 0.72 cores at the fed rate
    assert v.bottleneck == "input" and "contention" in v.headline
    assert "pipeline_cores_at_fed_rate" not in v.facts


@pytest.mark.parametrize("alone_cores, expected", [(0.10, True), (0.12, True), (0.14, False), (0.5, False)])
def test_the_most_the_pipeline_could_slow_the_step_is_held_to_the_contention_line(alone_cores, expected):
    # Input alone at exactly the fed rate: its cores are the fed cores; the step uses one core,
    # so the line sits at 1 - 1/1.15 = 0.13 cores.
    synthetic = summary("synthetic", 10, process=100.0)
    light = pipeline_cpu_at_fed_rate(synthetic, summary("pipeline", 8), summary("input_only", 8, process=100 * alone_cores))
    assert light.too_light is expected


def test_unknown_cpu_leaves_the_contention_rule_as_it_was():
    synthetic = summary("synthetic", 10)  # no process CPU read
    assert pipeline_cpu_at_fed_rate(synthetic, summary("pipeline", 8), summary("input_only", 3200, process=150.0)) is None
    assert pipeline_cpu_at_fed_rate(summary("synthetic", 10, process=100.0), summary("pipeline", 8), None) is None


def test_a_pipeline_using_more_than_the_step_has_has_no_bound():
    light = pipeline_cpu_at_fed_rate(summary("synthetic", 10, process=50.0), summary("pipeline", 8),
                                     summary("input_only", 8, process=80.0))
    assert light.most_slowdown is None and not light.too_light
