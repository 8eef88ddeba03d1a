"""The compare report rendered to an in-memory console of fixed width."""

from pipediag.report.terminal.compare import render_comparison, sides_table
from tests.comparisons import comparison
from tests.report.test_terminal import text


def test_faster_b_report():
    c = comparison()
    out = text(render_comparison(c), width=110)
    assert "A (baseline): data.py:make_dataset\n" in out
    assert "B (change): data.py:make_dataset_v2\n" in out
    assert "pipeline A: TensorSliceDataset → map(decode) → batch(32)" in out
    assert "pipeline B: TensorSliceDataset → parallel_map(decode) → batch(32)" in out
    assert "4 round(s) (A and B interleaved: AB, BA, AB, …)" in out and "stopped: the answer was clear" in out
    assert "FASTER  (fed step (what training sees))" in out
    assert "B is faster than A: 1.7" in out
    assert ("• input only (the pipeline alone): B is faster than A: 1.9" in out
            or "• input only (the pipeline alone): B is faster than A: 2.0" in out)
    assert "looked at after 4, 6, 9, 14, 21, 30 rounds, each look at 99.2%" in out
    assert "gate:" not in out


def test_sides_table_rows_and_ratios_fit_80_columns():
    out = text(sides_table(comparison()), width=80)
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    assert set(rows) == {"A", "B"}
    assert "60%" in rows["A"] and "n/a" in rows["A"]  # CPU from the samples; no GPU here
    assert "…" not in out  # nothing truncated
    assert "B/A: fed 1.7" in out
    assert "· input only 1.9" in out or "· input only 2.0" in out
    assert "GPU n/a: NVML could not start" in out


def test_gate_failure_is_shown():
    c = comparison(a_ms=5.0, b_ms=10.0, fail_if_slower=0.05)
    assert c.regression
    out = text(render_comparison(c), width=110)
    assert "SLOWER" in out
    assert "gate: FAIL: B is slower than A by more than 5%, with confidence (--fail-if-slower 5%)" in out


def test_an_unsettled_run_says_what_is_still_possible():
    c = comparison(a_ms=10.0, b_ms=10.0, jitter=0.9, max_rounds=4)
    out = text(render_comparison(c), width=110)
    assert "NO SIGNIFICANT DIFFERENCE" in out
    assert "not settled: B may be anywhere from" in out
    assert "! stopped at the cap (4 rounds)" in out


def test_no_interval_is_inconclusive_with_the_reason_said_once():
    c = comparison(max_seconds=4.0)
    out = text(render_comparison(c), width=110)
    assert "INCONCLUSIVE" in out
    assert "no verdict: the time cap (4 s) allowed only" in out
    assert out.count("the time cap (4 s) allowed only") == 1  # the headline says why; no second line
