"""Whether the tuned run could change the fixes, on scripted verdicts and plans (fixes.worth_tuning)."""

import pytest

from pipediag.fixes.worth_tuning import SKIPPED, skip_reason, stages_untimed_reason, verdict_so_far
from pipediag.records.change import Change
from pipediag.records.verdict import Verdict
from tests.summaries import summary

PARALLEL = Change("parallel_map", "map(decode)", "MapDataset/_2", "map(decode, num_parallel_calls=AUTOTUNE)", True)


def verdict(bottleneck: str, confidence: str = "high") -> Verdict:
    return Verdict(bottleneck, confidence, f"{bottleneck}-bound", ("evidence",))


def test_nothing_planned_skips_whatever_the_verdict():
    why = skip_reason(verdict("input"), [])
    assert why.startswith(SKIPPED) and "rebuilt unchanged" in why


@pytest.mark.parametrize("bottleneck", ["compute", "memory"])
def test_compute_or_memory_with_high_confidence_skips_and_names_what_was_planned(bottleneck):
    why = skip_reason(verdict(bottleneck), [PARALLEL])
    assert why.startswith(SKIPPED) and "planned, not measured: parallel_map at `map(decode)`" in why


@pytest.mark.parametrize("bottleneck, confidence", [("input", "high"), ("compute", "medium"), ("memory", "low"),
                                                    ("host", "high"), ("inconclusive", "low")])
def test_a_verdict_the_tuned_run_could_change_runs_it(bottleneck, confidence):
    assert skip_reason(verdict(bottleneck, confidence), [PARALLEL]) is None


def test_the_verdict_so_far_follows_the_rules():
    fed_slow = {"synthetic": summary("synthetic", 200.0), "pipeline": summary("pipeline", 50.0, wait=0.7),
                "input_only": summary("input_only", 52.0)}
    assert verdict_so_far(fed_slow, stages=(), handover=None, container=None, gpus_present=False,
                          ram_budget_bytes=None).bottleneck == "input"


@pytest.mark.parametrize("bottleneck, limit", [("compute", "the step itself is the limit"),
                                               ("memory", "memory is the limit")])
def test_the_stages_are_not_timed_when_the_limit_is_outside_the_input_with_high_confidence(bottleneck, limit):
    why = stages_untimed_reason(verdict(bottleneck))
    assert why.startswith(limit) and "sizes were read" in why and "--thorough" in why


@pytest.mark.parametrize("bottleneck, confidence", [("input", "high"), ("compute", "medium"), ("memory", "low"),
                                                    ("host", "high"), ("inconclusive", "low")])
def test_a_verdict_a_slow_stage_could_bear_on_times_the_stages(bottleneck, confidence):
    assert stages_untimed_reason(verdict(bottleneck, confidence)) is None
