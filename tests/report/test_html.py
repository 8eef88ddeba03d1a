"""The HTML report as a string: sections present only with their data, everything escaped."""

import re
from dataclasses import replace

from pipediag.fixes.recommend import Fix
from pipediag.records.change import Change
from pipediag.records.readings import CpuReading, GpuDevice, GpuReading, Sample, SampleLog
from pipediag.records.run import ModeRun
from pipediag.records.stage import Stage
from pipediag.records.verdict import Verdict
from pipediag.report.html.diagnose import (
    ablation_section,
    gpu_missing_reason,
    render_html,
    utilization_panels,
    waterfall_section,
)
from tests.summaries import GiB, diagnosis, summary

EVIL = "<script>alert(1)</script>"
VERDICT = Verdict("input", "high", "input-bound", ("the step waited for input 70% of the time in pipeline mode",))


def cpu(total=50.0):
    return CpuReading(total, (total, total), 2 * total, 0.0, GiB, 12 * GiB, 24 * GiB)


def with_samples(d, samples, **log):
    return replace(d, samples=SampleLog(interval_s=0.1, samples=tuple(samples), **log))


def test_verdict_modes_charts_and_fixes_are_there():
    fix = Fix("parallel_map", "map(decode)", "Run `map(decode)` in parallel", "ds = ds.map(decode, num_parallel_calls=AUTOTUNE)",
              3.0, (2.5, 3.5), "measured: the tuned pipeline ran 3.00x the original")
    page = render_html(diagnosis(verdict=VERDICT, fixes=[fix]))
    assert page.startswith("<!DOCTYPE html>")
    assert 'id="verdict"' in page and ">INPUT<" in page and "the step waited for input 70%" in page
    assert page.count("<svg") == 2 and 'id="chart-throughput"' in page and 'id="chart-utilization"' in page
    assert "×3.00 (95%: 2.50–3.50)" in page and "num_parallel_calls=AUTOTUNE" in page
    assert "194.0 – 206.0" in page  # synthetic's 95% interval in the table
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//)", page)  # nothing to fetch


def test_user_supplied_text_is_escaped_everywhere():
    d = diagnosis(verdict=replace(VERDICT, headline=EVIL, evidence=(EVIL,)), notes=(EVIL,),
                  fixes=[Fix("parallel_map", EVIL, EVIL, f"ds = ds.map({EVIL})</code></pre>{EVIL}", None, None, EVIL)])
    d = replace(d, target=EVIL, step=replace(d.step, description=EVIL),
                stages=d.stages + (Stage(3, "MapDataset/_4", "MapDataset", "map", function=EVIL),),
                modes={**d.modes, "tuned": replace(d.modes["tuned"], stop_reason="out_of_memory", error=None)})
    page = render_html(d)
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "</code></pre>&lt;script" not in page and "&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;" in page


def test_interrupted_run_without_verdict_or_modes_still_renders():
    d = replace(diagnosis(status="interrupted"), modes={}, runs={}, verdict=None,
                samples=SampleLog(interval_s=0.1, samples=()))
    page = render_html(d)
    assert 'id="partial"' in page and "INTERRUPTED: partial report" in page
    assert "NO VERDICT" in page
    assert "<svg" not in page  # nothing measured, nothing drawn


def test_gpu_absent_is_said_and_never_drawn():
    d = diagnosis(verdict=VERDICT)
    d = with_samples(d, [Sample(t, cpu()) for t in (10, 20, 30)],
                     gpu_unavailable_reason="NVML could not start (no driver)")
    assert gpu_missing_reason(d) == "NVML could not start (no driver)"
    assert all(not s.label.startswith("GPU") for p in utilization_panels(d) for s in p.series)
    assert "GPU: not measured (NVML could not start (no driver))" in render_html(d)


def test_gpu_lines_leave_gaps_where_a_reading_failed():
    gpu = [GpuReading(0, 40.0, None, None, None, None), GpuReading(0, None, None, None, None, None),
           GpuReading(0, 60.0, None, None, None, None)]
    d = with_samples(diagnosis(), [Sample(t, cpu(), (g,)) for t, g in zip((10, 20, 30), gpu)],
                     gpu_devices=(GpuDevice(0, "H200", 141 * GiB),))
    d = replace(d, runs={"pipeline": ModeRun("pipeline", 0, 100, (1,), (2,), None, 1, 0, "stable")},
                modes={"pipeline": summary("pipeline", 50.0)})
    (panel,) = utilization_panels(d)
    gpu_series = [s for s in panel.series if s.label == "GPU 0"]
    assert gpu_series[0].values == (40.0, None, 60.0)
    assert gpu_series[0].times_s == (10e-9, 20e-9, 30e-9)
    assert gpu_missing_reason(d) is None and 'id="gpu-missing"' not in render_html(d)


def test_modes_not_run_are_marked_not_run():
    d = diagnosis(verdict=VERDICT, modes={"pipeline": summary("pipeline", 50.0, wait=0.5)})
    page = render_html(d)
    assert page.count("not run</td>") == 3


def an_ablation():
    """Two changes, each run alone between two control runs, then together (plain numbers)."""
    from pipediag.analysis.ablation import VariantResult, conclude

    def v(name, role, keys, rate):
        return VariantResult(name, role, tuple(keys), rate, (rate * 0.97, rate * 1.03), 100, "stable")

    variants = [v("control", "control", [], 50.0), v("parallel_map alone", "alone", [PARALLEL.key], 155.0),
                v("prefetch alone", "alone", [PREFETCH.key], 51.0), v("control", "control", [], 49.0),
                v("together", "together", [PARALLEL.key, PREFETCH.key], 160.0)]
    return conclude(50.0, (48.5, 51.5), [(c.key, c.kind, c.stage) for c in (PARALLEL, PREFETCH)], variants, 3.0)


PARALLEL = Change("parallel_map", "map(decode_example)", "MapDataset/_2", "map(decode_example): parallel", True)
PREFETCH = Change("prefetch", None, None, "prefetch at the end", True)


def with_anatomy(**kwargs):
    from tests.summaries import anatomy_and_stages

    anatomy, stages = anatomy_and_stages()
    return diagnosis(verdict=VERDICT, anatomy=anatomy, stages=stages, **kwargs)


def test_no_anatomy_or_ablation_no_section():
    page = render_html(diagnosis(verdict=VERDICT))
    assert 'id="waterfall"' not in page and 'id="ablation"' not in page


def test_waterfall_chart_and_table_name_the_slow_stage():
    page = render_html(with_anatomy())
    section = waterfall_section(with_anatomy())
    assert 'id="chart-waterfall"' in section and section.count("<svg") == 1
    assert "Slow stage: <code class=\"slow\">map(decode_example)</code>" in section
    rows = re.findall(r"<tr( class=\"slow\")?><td class=\"left\"><code>([^<]*)</code>", section)
    assert [(bool(slow), label) for slow, label in rows] == [(False, "TensorSliceDataset"), (True, "map(decode_example)"),
                                                             (False, "batch(16)")]
    assert "◀ slowest" in section and "+19.00" in section and "91%" in section  # 1/50 - 1/1000 s, of 1/48 s
    assert "elements/s ÷ 16" in section  # the unit note
    assert page.count("<svg") == 3  # throughput, utilization, waterfall


def test_the_slow_bar_is_red_and_the_others_are_not():
    from pipediag.report.html import charts

    svg = waterfall_section(with_anatomy())
    assert svg.count(f"fill: {charts.SLOW_COLOR}") == 1 and svg.count(f"fill: {charts.STAGE_COLOR}") == 2


def test_an_untimed_stage_shows_na_with_its_reason_not_zero():
    d = with_anatomy()
    rows = list(d.anatomy.rows)
    rows[0] = replace(rows[0], batches_per_sec=None, batches_per_sec_ci=None, added_ms_per_batch=None, share=None,
                      reason="not comparable: TFRecordDataset turns file names into records")
    d = replace(d, anatomy=replace(d.anatomy, rows=tuple(rows), bottleneck_stage=None, bottleneck_index=None,
                                   reason="no single stage stands out"))
    section = waterfall_section(d)
    first = re.search(r"<tr><td class=\"left\"><code>TensorSliceDataset</code></td>(.*?)</tr>", section).group(1)
    assert ">n/a<" in first and "turns file names into records" in first and ">0.0<" not in first
    assert "No slow stage named: no single stage stands out" in section and 'class="slow"' not in section


def test_waterfall_escapes_stage_names():
    d = with_anatomy()
    rows = list(d.anatomy.rows)
    rows[1] = replace(rows[1], label=f"map({EVIL})")
    d = replace(d, anatomy=replace(d.anatomy, rows=tuple(rows), bottleneck_stage=f"map({EVIL})",
                                   reason=f"map({EVIL}) adds 19 ms"))
    section = waterfall_section(d)
    assert "<script" not in section and "map(&lt;script&gt;alert(1)&lt;/script&gt;)" in section


def test_ablation_table_each_change_alone_against_the_control():
    d = with_anatomy(tuning=(PARALLEL, PREFETCH), ablation=an_ablation())
    section = ablation_section(d)
    assert "Baseline: the control run" in section and "49.5 batches/s (95%: 47.5 – 51.5)" in section
    row = r'<tr class="effect-\w+"><td class="left"[^>]*><code>(\w+)</code>.*?</tr>'
    rows = {m.group(1): m.group(0) for m in re.finditer(row, section)}
    assert set(rows) == {"parallel_map", "prefetch"}
    assert "×3.13" in rows["parallel_map"] and ">gain<" in rows["parallel_map"] and ">alone<" in rows["parallel_map"]
    assert "on <code>map(decode_example)</code>" in rows["parallel_map"]
    assert "×1.03" in rows["prefetch"] and ">no clear effect<" in rows["prefetch"]
    assert "All applied changes together: <strong>×3.23</strong>" in section
    assert section.count("<tr><td class=\"left\">control</td>") == 2  # both control runs are listed
    page = render_html(d)
    assert "— alone ×3.13 (gain)" in page  # the tuned-mode list says what each change gave alone
    withheld = ablation_section(with_anatomy(tuning=(PARALLEL, PREFETCH), ablation=an_ablation(), tried=(PARALLEL,)))
    assert ">faster, not taken as a gain<" in withheld and ">gain<" not in withheld
    assert '<tr class="effect-gain">' not in withheld


def test_an_unmeasured_change_says_why_not_zero():
    from pipediag.analysis.ablation import VariantResult, conclude

    broken = VariantResult("prefetch alone", "alone", (PREFETCH.key,), None, None, 0, None, error=f"raised {EVIL}")
    ab = an_ablation()
    ab = conclude(50.0, (48.5, 51.5), [(c.key, c.kind, c.stage) for c in (PARALLEL, PREFETCH)],
                  [v for v in ab.variants if v.name != "prefetch alone"] + [broken], 3.0)
    section = ablation_section(with_anatomy(tuning=(PARALLEL, PREFETCH), ablation=ab))
    row = re.search(r'<tr class="effect-unmeasured">.*?</tr>', section).group(0)
    assert "<td>—</td><td>—</td>" in row and ">not measured<" in row and "raised &lt;script&gt;" in row
    assert "×0.00" not in section and "<script" not in section


def test_several_gpus_get_their_own_table_and_one_gpu_none():
    from pipediag.report.html.diagnose import render_html
    from pipediag.results.diagnose import Diagnosis
    from tests.report.test_terminal import gpu_diagnosis, several_gpus_diagnosis

    page = render_html(several_gpus_diagnosis())
    table = page[page.index('<table id="gpus">'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == 1 + 4  # the head, and two GPUs in each of two modes
    assert "GPU-b" in table and "12%" in table and "10 – 14" in table
    assert "GPUs 0, 1 (CUDA_VISIBLE_DEVICES)" in page
    assert 'id="gpus"' not in render_html(gpu_diagnosis())
    # and the per-GPU windows survive the JSON round trip
    d = several_gpus_diagnosis()
    back = Diagnosis.from_dict(d.to_dict())
    assert back.modes["pipeline"].gpus == d.modes["pipeline"].gpus
    assert back.samples.gpu_selection == "GPUs 0, 1 (CUDA_VISIBLE_DEVICES)"


def test_the_header_says_where_the_time_went_and_quick_says_fixes_were_not_measured():
    from pipediag.records.phases import Phase

    d = replace(diagnosis(verdict=VERDICT), phases=(Phase("synthetic", 4.0), Phase("tuned", 10.0)))
    page = render_html(replace(d, settings={**d.settings, "quick": True}))
    assert "21.5 s — synthetic 4.0, tuned 10.0, other 7.5" in page
    assert 'id="fixes-unmeasured"' in page and "without --quick" in page
