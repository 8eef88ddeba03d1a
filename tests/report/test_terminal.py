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


def test_anatomy_table_marks_the_slow_stage_and_its_units():
    from tests.summaries import anatomy_and_stages

    anatomy, stages = anatomy_and_stages()
    out = text(render_diagnosis(diagnosis(verdict=VERDICT, anatomy=anatomy, stages=stages)))
    assert "Anatomy: the pipeline cut after each stage, iterated alone" in out
    row = next(line for line in out.splitlines() if line.startswith("│map(decode_example)"))
    assert "50.0 ±" in row and "+19.00" in row and "∞" in row and "48.0 KiB" in row
    assert "◀ slowest; serial, random" in out
    assert "stages before batch(16) yield elements, shown as elements/s ÷ 16" in out
    assert "slow stage: map(decode_example) adds 19.00 ms to every batch" in out


def test_tuned_mode_lists_each_changes_own_speedup():
    from pipediag.analysis.ablation import VariantResult, conclude

    parallel = Change("parallel_map", "map(decode_example)", "n", "map(decode_example): parallel", True)
    prefetch = Change("prefetch", "batch(16)", "b", "prefetch(AUTOTUNE) at the end", True)
    variants = [VariantResult("a", "alone", (parallel.key,), 150.0, (145.0, 155.0), 100, "stable"),
                VariantResult("b", "alone", (prefetch.key,), 50.5, (49.0, 52.0), 100, "stable"),
                VariantResult("t", "together", (parallel.key, prefetch.key), 155.0, (150.0, 160.0), 100, "stable")]
    ablation = conclude(50.0, (48.0, 52.0), [(c.key, c.kind, c.stage) for c in (parallel, prefetch)], variants, 3.0)
    out = text(render_diagnosis(diagnosis(verdict=VERDICT, tuning=[parallel, prefetch], ablation=ablation)))
    assert "Tuned mode: all applied changes together ×3.10" in out
    assert "[applied] map(decode_example): parallel — alone ×3.00 (gain)" in out
    assert "[applied] prefetch(AUTOTUNE) at the end — alone ×1.01 (none)" in out
