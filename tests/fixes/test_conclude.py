"""The chain from summaries to verdict and fixes (fixes.conclude), on scripted numbers."""

from pipediag.fixes.conclude import conclude, ended_text
from pipediag.records.change import Change
from tests.summaries import summary

PARALLEL = Change("parallel_map", "map(decode)", "MapDataset/_2", "map(decode): parallel", True)


def input_bound():
    return {"synthetic": summary("synthetic", 100), "pipeline": summary("pipeline", 20, wait=0.8),
            "input_only": summary("input_only", 21), "tuned": summary("tuned", 80, wait=0.1)}


def run(summaries, **kw):
    args = dict(status_complete=True, status="complete", stages=(), tuning=(PARALLEL,), ablation=None, candidates=1,
                handover=None, container=None, gpus_present=False, tf_gpu_without_memory_growth=False,
                ram_budget_bytes=None, step_accelerators=(), framework=None, slow_stage=None)
    return conclude(summaries, **{**args, **kw})


def test_a_complete_run_gets_the_rules_verdict_and_a_measured_fix():
    done = run(input_bound())
    assert done.verdict.bottleneck == "input"
    assert not any("this verdict uses only the modes that finished" in e for e in done.verdict.evidence)
    assert [f.kind for f in done.recommendation.fixes][:1] == ["parallel_map"]


def test_an_incomplete_run_says_how_it_ended_and_lowers_the_confidence():
    cut = run(input_bound(), status_complete=False, status="stalled")
    assert cut.verdict.confidence == "low"
    assert cut.verdict.evidence[-1] == "the run stalled: this verdict uses only the modes that finished"
    assert ended_text("interrupted") == "was interrupted" and ended_text("failed") == "failed"


def test_compute_with_no_candidates_says_nothing_is_left_on_the_input_side():
    compute = {"synthetic": summary("synthetic", 20), "pipeline": summary("pipeline", 20),
               "input_only": summary("input_only", 200)}
    done = run(compute, tuning=(), candidates=0)
    assert done.verdict.bottleneck == "compute"
    assert done.verdict.facts.get("input_changes_left") == 0
    assert run(compute, tuning=(), candidates=None).verdict.facts.get("input_changes_left") is None
