"""The HTML report as a string: sections present only with their data, everything escaped."""

import re
from dataclasses import replace

from pipediag.builder.stages import Stage
from pipediag.fixes.recommend import Fix
from pipediag.modes.runner import ModeRun
from pipediag.report.html import gpu_missing_reason, render_html, utilization_panels
from pipediag.samples.readings import CpuReading, GpuDevice, GpuReading, Sample, SampleLog
from pipediag.verdict.rules import Verdict
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


def test_waterfall_renders_only_with_an_anatomy():
    from types import SimpleNamespace

    from pipediag.report.html import waterfall_section

    assert waterfall_section(diagnosis()) is None  # main's Diagnosis has no anatomy yet
    row = lambda label, rate, added: SimpleNamespace(label=label, batches_per_sec=rate, added_ms_per_batch=added,  # noqa: E731
                                                     batches_per_sec_ci=(rate * 0.9, rate * 1.1), reason=None)
    anatomy = SimpleNamespace(rows=(row("TensorSliceDataset", 900.0, None), row(f"map({EVIL})", 60.0, 15.5)),
                              bottleneck_stage=f"map({EVIL})", reason="adds 93% of the time per batch")
    html = waterfall_section(SimpleNamespace(anatomy=anatomy))
    assert "<svg" in html and 'id="waterfall"' in html and "15.50" in html
    assert "<script" not in html and "Slow stage: <code>map(&lt;script&gt;" in html
