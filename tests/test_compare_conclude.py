"""compare_api.conclude on fake-clock rounds: what a comparison says about a saved baseline."""

from dataclasses import replace

from pipediag.api.compare import conclude
from pipediag.modes.compare import ComparePlan, Side, run_rounds
from pipediag.modes.runner import run_mode
from pipediag.records.readings import SampleLog
from pipediag.records.run import StopRule
from pipediag.records.step import StepInfo
from pipediag.results.compare import SideInfo
from pipediag.verdict.compare import SLOWER, is_clear
from tests.comparisons import STAGES_B, side_info
from tests.modes.test_compare import FakeClock, feed, stepper
from tests.summaries import diagnosis, environment


def test_a_saved_baseline_from_another_machine_is_said_and_its_own_numbers_are_used():
    clock = FakeClock()
    rule = StopRule(max_seconds=3, min_seconds=3, warmup_steps=0)
    runs = {"pipeline": run_mode("pipeline", feed(clock, 5), stepper(clock, 2), rule, clock_ns=clock),
            "input_only": run_mode("input_only", feed(clock, 5), None, rule, clock_ns=clock)}
    saved = replace(diagnosis(), runs=runs, environment=environment(cpu_logical=8, tensorflow_version="2.15.0"),
                    status="interrupted")
    plan = ComparePlan()
    rounds = run_rounds(None, Side("B", feed(clock, 10)), stepper(clock, 2), plan,
                        clear=lambda iv: is_clear(iv, 0.05, 0.05), clock_ns=clock,
                        baseline={"fed": runs["pipeline"], "input_only": runs["input_only"]})
    a = SideInfo(label=saved.target, source="saved", element=saved.element, stages=saved.stages,
                 cardinality=saved.cardinality, first_batch_ms=saved.first_batch_ms, saved_file="base.json",
                 saved_created_at=saved.created_at)
    c = conclude(a, side_info("data.py:make_dataset", STAGES_B), StepInfo("standin", "stand-in model (an MLP)"),
                 rounds, saved, environment(), plan, 0.05, 0.05, SampleLog(0.1, ()), [], clock.ns / 1e9, None, "tf")
    assert c.verdict.verdict == SLOWER and c.regression  # 12 ms a step against the saved 7 ms
    assert c.interval.method == "unpaired"
    assert any("different machine" in n and "cpu_logical: 8 vs 2" in n and "tensorflow_version" in n
               for n in c.notes)
    assert any("not interleaved" in n for n in c.notes)
    assert any("the saved run is interrupted" in n for n in c.notes)
    assert c.sides["A"]["fed"].rate == saved.modes["pipeline"].batches_per_sec
    assert c.sides["B"]["fed"].usage.gpu_util_pct is None  # no samples: unknown, never 0
    assert c.to_dict()["baseline_environment"]["cpu_logical"] == 8


def test_a_comparison_whose_users_code_failed_mid_rounds_keeps_its_rounds_and_the_error():
    from pipediag.results.compare import Comparison

    clock = FakeClock()
    calls = {"n": 0}

    def step(batch):
        calls["n"] += 1
        clock.advance(2)
        if calls["n"] == 3000:
            raise RuntimeError("device error on a real batch")

    plan = ComparePlan(kinds=("fed",))
    rounds = run_rounds(Side("A", feed(clock, 1)), Side("B", feed(clock, 3)), step, plan,
                        clear=lambda iv: False, clock_ns=clock)
    c = conclude(side_info("data.py:a", STAGES_B), side_info("data.py:b", STAGES_B), StepInfo("user", "your step"), rounds,
                 None, environment(), plan, 0.05, None, SampleLog(0.1, ()), [], clock.ns / 1e9, None, "tf")
    assert c.status == "failed" and c.stop_reason == "failed" and c.error is rounds.error
    assert len(c.rounds) >= 2 and c.interval is not None  # the rounds before the failure still give a verdict
    again = Comparison.from_dict(c.to_dict())
    assert again.status == "failed" and again.error is None and len(again.rounds) == len(c.rounds)
