"""The HTML pages of a comparison, a sweep and a scale result, as strings: numbers and names are
there, user strings are escaped, a missing value is shown as missing (with its reason), never 0."""

import re
from dataclasses import replace

import pytest

from pipediag.records.stage import Stage
from pipediag.report.html.compare import render_comparison_html, side_interval, side_rates
from pipediag.report.html.pages import render_page
from pipediag.report.html.scale import render_scale_html
from pipediag.report.html.sweep import render_sweep_html
from pipediag.results.sweep import OK, SweepPoint
from tests.comparisons import comparison
from tests.report.test_scale import result as scale_result
from tests.report.test_sweep import a_sweep
from tests.summaries import summary

EVIL = "<script>alert(1)</script>"


def row(page, table_id, first_cell):
    """The cells of the row of table `table_id` whose first cell is `first_cell`."""
    table = re.search(rf'<table id="{table_id}">(.*?)</table>', page, re.S).group(1)
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} in #{table_id}")


def self_contained(page):
    assert page.startswith("<!DOCTYPE html>") and "default-src 'none'" in page
    assert "<script" not in page.lower()
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//)", page)


# --- comparison -------------------------------------------------------------------------------

def test_comparison_page_verdict_interval_sides_rounds_and_pipelines():
    c = comparison()
    page = render_comparison_html(c)
    self_contained(page)
    iv = c.interval
    assert ">FASTER<" in page and f"B/A = <strong>{iv.ratio:.3f}×</strong>" in page
    assert f"95% interval <strong>{iv.low:.3f} – {iv.high:.3f}</strong>" in page
    a, b = row(page, "sides", "A"), row(page, "sides", "B")
    for side, cells in (("A", a), ("B", b)):
        fed, only = c.sides[side]["fed"], c.sides[side]["input_only"]
        assert cells[1] == f"{fed.rate:.1f}" and cells[6] == f"{only.rate:.1f}"
        for kind, column in (("fed", 2), ("input_only", 7)):
            ci, why = side_interval(c, side, kind)
            assert why is None and cells[column] == f"{ci[0]:.1f} – {ci[1]:.1f}"
        assert cells[5] == "n/a"  # no GPU here
    assert "GPU n/a: NVML could not start" in page
    assert 'id="chart-rounds"' in page and page.count("<svg") == 1
    assert len(re.findall(r"<tr><td>\d+</td><td>(AB|BA)</td>", page)) == len(c.rounds)
    assert 'id="stages-a"' in page and 'id="stages-b"' in page
    assert "<code>parallel_map(decode)</code>" in page and "<code>map(decode)</code>" in page


def test_side_interval_rests_on_the_rounds_and_contains_the_side_rate():
    c = comparison()
    for side in ("A", "B"):
        ci, _ = side_interval(c, side, "fed")
        assert ci[0] < c.sides[side]["fed"].rate < ci[1]


def test_comparison_without_rounds_says_inconclusive_and_why():
    c = comparison(max_seconds=4.0)
    assert c.rounds == ()
    page = render_comparison_html(c)
    assert ">INCONCLUSIVE<" in page and "no verdict: the time cap (4 s) allowed only" in page
    assert page.count("the time cap (4 s) allowed only") == 1  # the headline says why; no second line
    assert "B/A: <strong>n/a</strong>" in page
    assert row(page, "sides", "A")[1:] == ["—"] * 8
    assert "A fed: not measured (0 round(s) counted" in page
    assert 'id="chart-rounds"' not in page and ">0.0<" not in page


def test_side_interval_needs_three_turns_and_says_so():
    c = comparison(max_seconds=8.0)
    assert len(c.rounds) == 2
    page = render_comparison_html(c)
    a = row(page, "sides", "A")
    assert a[1] == f"{c.sides['A']['fed'].rate:.1f}" and a[2] == "n/a"
    assert "A fed interval n/a: 2 turn(s): an interval needs at least 3" in page


def test_comparison_escapes_labels_stages_and_notes():
    c = comparison(notes=(EVIL,))
    evil_stage = Stage(1, "n1", "MapDataset", "map", function=EVIL)
    c = replace(c, a=replace(c.a, label=EVIL, stages=(c.a.stages[0], evil_stage)),
                b=replace(c.b, label=f"b.py:{EVIL}"))
    page = render_comparison_html(c)
    assert "<script" not in page.lower()
    assert "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>" in page
    assert "map(&lt;script&gt;alert(1)&lt;/script&gt;)" in page
    assert page.count("&lt;script&gt;") >= 4  # title, heading, facts, stage, note


def test_slower_with_a_failed_gate_is_shown():
    page = render_comparison_html(comparison(a_ms=5.0, b_ms=10.0, fail_if_slower=0.05))
    assert ">SLOWER<" in page and "gate: FAIL: B is slower than A by more than 5%" in page


def test_against_a_saved_run_the_chart_shows_rates_and_a_rests_on_its_chunks():
    c = comparison()
    chunks = (80.0, 84.0, 82.0, 83.0, 81.0)
    rounds = tuple(replace(r, order="B", rates={k: {"B": v["B"]} for k, v in r.rates.items()}) for r in c.rounds)
    c = replace(c, a=replace(c.a, source="saved", saved_file="base.json", saved_created_at="2026-11-29"),
                rounds=rounds, baseline_chunks={"fed": chunks})
    assert side_rates(c, "A", "fed") == chunks and side_interval(c, "A", "fed")[0][0] < 82.0
    assert side_rates(c, "B", "fed") == tuple(r.rates["fed"]["B"] for r in rounds)
    page = render_comparison_html(c)
    # 82 ± t(4) · sd / √5 = 82 ± 2.776 · √(2.5 / 5) = 82 ± 1.96
    assert "(saved run: base.json, 2026-11-29)" in page and row(page, "sides", "A (saved)")[2] == "80.0 – 84.0"
    assert "A input only interval n/a: 0 turn(s)" in page  # the saved run had no input-only chunks here
    assert 'id="chart-rounds"' in page and "Welch" in page


# --- sweep ------------------------------------------------------------------------------------

def test_sweep_page_table_knee_oom_and_chart():
    page = render_sweep_html(a_sweep())
    self_contained(page)
    assert "Knee:</strong> batch size <strong>256</strong> (300000 examples/s)" in page
    assert "runs out of memory at 4096" in page
    assert row(page, "sweep", "256")[1:4] == ["300000", "291000 – 309000", "1.73x"]
    assert row(page, "sweep", "256")[-1] == "compute ← knee"
    assert row(page, "sweep", "1024")[9] == "2.00"  # peak GiB
    oom = row(page, "sweep", "4096")
    assert oom[1] == "—" and oom[9] == "—" and oom[-1] == "out of memory"
    assert row(page, "sweep", "16384")[-1] == "skipped"
    assert 'id="chart-sweep"' in page and page.count("<svg") == 1
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" in page


def test_sweep_chart_leaves_out_sizes_that_did_not_run(monkeypatch):
    from pipediag.report.html import charts
    from pipediag.report.html.sweep import sweep_chart

    drawn = []
    real = charts.xy_chart
    monkeypatch.setattr(charts, "xy_chart", lambda lines, *a, **k: drawn.append((lines, k)) or real(lines, *a, **k))
    assert sweep_chart(a_sweep()).startswith("<svg")
    (lines, kwargs), = drawn
    throughput = lines[0]
    assert throughput.ys == (100_000, 300_000, 330_000, None, None)  # gaps, not zeros
    assert [m.label for m in kwargs["marks"]] == ["knee: 256", "out of memory at 4096"]
    assert lines[2].right and lines[2].ys[:3] == (0.5, 1.0, 2.0)


def test_sweep_without_memory_says_why_and_escapes_the_target():
    s = a_sweep()
    points = tuple(replace(p, peak_memory=None, peak_memory_reason="NVML could not start" if p.status == OK else None)
                   for p in s.points)
    s = replace(s, target=EVIL, points=points, notes=(EVIL,))
    page = render_sweep_html(s)
    assert "<script" not in page.lower() and "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>" in page
    assert "peak memory unknown (—): NVML could not start" in page
    assert row(page, "sweep", "256")[9] == "—"
    assert "No memory line: the peak was not measured." in page


def test_sweep_where_nothing_ran_has_no_chart():
    s = a_sweep()
    s = replace(s, points=tuple(SweepPoint(p.batch_size, "skipped", *([None] * 11), note="not run") for p in s.points))
    page = render_sweep_html(s)
    assert "<svg" not in page and row(page, "sweep", "64")[1] == "—"


# --- scale ------------------------------------------------------------------------------------

def test_scale_page_plan_measured_and_chart():
    page = render_scale_html(scale_result())
    self_contained(page)
    assert "tf.data service: <span" in page and ">WORTH IT<" in page
    assert row(page, "measured", "1 worker: input")[:6] == ["1 worker: input", "48.0", "46.6 – 49.4", "48.0", "100%",
                                                            "94%"]
    assert row(page, "measured", "2 workers: input")[-1] == "shared"
    assert row(page, "measured", "2 workers: step fed")[1] == "55.0"
    assert row(page, "plan", "8")[1:7] == ["2400.0", "too slow", "50", "52", "50–52", "3"]
    assert 'id="chart-scale"' in page and page.count("<svg") == 1
    assert "NOT checked here" in page  # the assumptions
    assert "3 process(es) stopped in 1.3 s (all ended cleanly)" in page


def test_scale_chart_has_one_point_per_worker_count_and_the_levels(monkeypatch):
    from pipediag.report.html import charts
    from pipediag.report.html.scale import scale_chart

    drawn = []
    real = charts.xy_chart
    monkeypatch.setattr(charts, "xy_chart", lambda lines, *a, **k: drawn.append((lines, k)) or real(lines, *a, **k))
    assert scale_chart(scale_result()).startswith("<svg")
    (lines, kwargs), = drawn
    assert lines[0].xs == (1.0, 2.0) and lines[0].ys == (48.0, 70.0) and lines[1].ys == (47.5, 55.0)
    assert [round(level.value) for level in kwargs["levels"]] == [300, 60, 220]


def test_scale_missing_measurements_are_dashes_with_reasons_and_names_are_escaped():
    r = scale_result()
    counts = (replace(r.counts[0], fed=None, worker_cpu_pct=None, worker_cpu_reason="psutil could not read it"),
              r.counts[1])
    r = replace(r, target=EVIL, counts=counts, stages=r.stages + (Stage(3, "n3", "MapDataset", "map", function=EVIL),),
                notes=(EVIL,), modes={k: v for k, v in r.modes.items() if k != "transfer"})
    page = render_scale_html(r)
    assert "<script" not in page.lower() and page.count("&lt;script&gt;") >= 3
    fed = row(page, "measured", "1 worker: step fed")
    assert fed[1:3] == ["—", "—"]
    assert row(page, "measured", "1 worker: input")[5] == "n/a" and "worker CPU n/a: psutil could not read it" in page
    assert row(page, "measured", "service, constant batch")[1] == "—"


def test_scale_without_a_plan_says_so():
    page = render_scale_html(replace(scale_result(), plan=None, overhead=None, status="interrupted"))
    assert "NO PLAN" in page and 'id="partial"' in page and "not measured: the run ended before" in page


# --- the dispatcher ---------------------------------------------------------------------------

@pytest.mark.parametrize("make, title", [(comparison, "pipediag compare: FASTER"), (a_sweep, "pipediag sweep: knee at 256"),
                                         (scale_result, "pipediag scale: worth it")])
def test_render_page_picks_the_page_of_each_kind(make, title):
    assert f"<title>{title}" in render_page(make())


def test_render_page_refuses_what_it_does_not_know():
    with pytest.raises(TypeError, match="no HTML page for a ModeSummary"):
        render_page(summary("pipeline", 1.0))
