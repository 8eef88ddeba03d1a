"""The terminal report rendered to an in-memory console of fixed width."""

from rich.console import Console

from pipediag.fixes.recommend import Fix
from pipediag.modes.changes import Change
from pipediag.report.terminal import modes_table, render_diagnosis
from pipediag.verdict.rules import Verdict
from tests.summaries import diagnosis


def text(renderable, width=100):
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    console.print(renderable)
    return console.export_text()


VERDICT = Verdict("input", "high", "input-bound: the pipeline alone delivers fewer batches than the step could take",
                  ("the step waited for input 70% of the time in pipeline mode",))
FIX = Fix("parallel_map", "map(decode_example)", "Run `map(decode_example)` in parallel: it runs on one core",
          "ds = ds.map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)", 3.0, (2.5, 3.5),
          "measured: the tuned pipeline ran 3.00x the original")


def test_modes_table_rows():
    out = text(modes_table(diagnosis()))
    lines = [line for line in out.splitlines() if line.startswith(("│synthetic", "│pipeline", "│input_only", "│tuned"))]
    assert lines[0].split("│")[1:4] == ["synthetic  ", "     200.0 ", "  6.0 "]
    assert "70%" in lines[1]
    assert "GPU n/a: NVML could not start" in out
    assert "first step (tracing, compiling) 500 ms" in out


def test_full_report_shows_verdict_evidence_fixes_and_pipeline():
    d = diagnosis(verdict=VERDICT, fixes=[FIX],
                  tuning=[Change("parallel_map", "map(decode_example)", "n", "map(decode_example): parallel", True),
                          Change("threading", None, None, "threadpool 32", False, reason="CPUs were busy")])
    out = text(render_diagnosis(d))
    assert "pipeline: TensorSliceDataset → map(decode_example) → batch(16)" in out
    assert "INPUT  (confidence: high)" in out
    assert "• the step waited for input 70% of the time in pipeline mode" in out
    assert "1. Run `map(decode_example)` in parallel: it runs on one core" in out
    assert "×3.00 measured: the tuned pipeline ran 3.00x the original" in out
    assert "ds = ds.map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)" in out
    assert "[applied] map(decode_example): parallel" in out
    assert "[left out] threadpool 32 — CPUs were busy" in out


def test_interrupted_report_says_partial():
    out = text(render_diagnosis(diagnosis(status="interrupted", verdict=VERDICT)))
    assert "[INTERRUPTED: partial report]" in out


def test_no_fix_says_so():
    out = text(render_diagnosis(diagnosis(verdict=Verdict("compute", "high", "compute-bound", ()))))
    assert "No fix recommended" in out


def test_a_fit_shows_only_the_pipeline_mode():
    from dataclasses import replace

    from pipediag.steps.step import StepInfo
    from tests.summaries import summary

    d = diagnosis(verdict=VERDICT, modes={"pipeline": summary("pipeline", 50.0, wait=0.5, stop="fit_ended")})
    d = replace(d, step=StepInfo("keras_fit", "your own model.fit of 'm'"), target="model.fit of Keras model 'm'")
    out = text(render_diagnosis(d))
    assert out.startswith("pipediag InputMonitor: model.fit of Keras model 'm'")
    assert "│pipeline" in out and "│synthetic" not in out and "│tuned" not in out
    assert "stopped early" not in out
