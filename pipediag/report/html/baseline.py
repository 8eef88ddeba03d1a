"""The HTML page of a machine profile (`pipediag baseline --html`, `pipediag report X.json --html`).

Same shell as the other pages (`report.html.page`): the model and why, the OOM edge, one chart
(throughput with its interval and peak memory against batch size), the table, the machine.
A size that did not run has no point (a gap), never a 0.
"""

from __future__ import annotations

from pipediag.report.common import peak_gib
from pipediag.report.html import charts, parts
from pipediag.results.baseline import OK, OUT_OF_MEMORY, BaselineProfile


def header_section(p: BaselineProfile) -> str:
    facts = [
        ("model", p.model_description + (f", {p.parameters:,} parameters" if p.parameters else "")),
        ("why this model", p.model_reason),
        ("Keras backend", f"{p.backend} on the {p.device}"),
        ("precision", f"{p.precision} (Keras dtype policy)"),
        ("batch sizes", ", ".join(str(x.batch_size) for x in p.points)),
        ("budget", f"{p.settings.get('budget_s', 0):g} s in all, each size at most {p.settings.get('window_s', 0):g} s"),
    ]
    return parts.page_head("<h1>pipediag baseline</h1>", p.status, facts, p.elapsed_s, p.created_at)


def summary_section(p: BaselineProfile) -> str:
    ran = [x for x in p.points if x.status == OK and x.samples_per_sec]
    best = max(ran, key=lambda x: x.samples_per_sec, default=None)
    top = ("" if best is None else
           f'<p><strong>Fastest:</strong> {best.samples_per_sec:.1f} samples/s at batch {best.batch_size}</p>')
    return (f'<h2>Result</h2><div class="verdict" id="verdict">{top}'
            f'<p id="oom-edge"><strong>Memory:</strong> {parts.escape(p.oom_edge.text)}</p></div>')


def table_section(p: BaselineProfile) -> str:
    names = ("batch", "samples/s", "95% interval", "p50 ms", "p90 ms", "steps", "peak GiB", "GPU", "SM act", "power W",
             "result")
    rows = []
    for x in p.points:
        result = "ok" if x.status == OK else (x.note or x.status.replace("_", " "))
        if x.error is not None and x.status != OK:
            result += f" ({x.error.type}: {x.error.message[:200]})"
        cells = [str(x.batch_size), parts.fmt_num(x.samples_per_sec), parts.fmt_interval(x.samples_per_sec_ci),
                 parts.fmt_num(x.step_ms_p50, "{:.2f}"), parts.fmt_num(x.step_ms_p90, "{:.2f}"), str(len(x.step_ns)),
                 peak_gib(x.peak_memory),
                 parts.fmt_num(x.gpu_util_pct, "{:.0f}%", "n/a"), parts.fmt_num(x.gpm_sm_active_pct, "{:.0f}%", "n/a"),
                 parts.fmt_num(x.power_w_mean, "{:.0f}", "n/a")]
        cls = ' class="slow"' if x.status == OUT_OF_MEMORY else ""
        rows.append(parts.result_row(cells, result, cls))
    notes = ["samples/s: timed steps x batch size / their time (first step and warm-up apart); p50/p90: step time "
             "percentiles; a size that did not run shows —"]
    sources = sorted({x.peak_memory.source for x in p.points if x.peak_memory})
    if sources:
        notes.append("peak: " + "; ".join(sources))
    reasons = sorted({x.peak_memory_reason for x in p.points if x.peak_memory is None and x.peak_memory_reason})
    if reasons:
        notes.append("peak memory unknown (—): " + "; ".join(reasons))
    gpu = sorted({x.gpu_util_reason for x in p.points if x.gpu_util_pct is None and x.gpu_util_reason})
    if gpu:
        notes.append("GPU n/a: " + "; ".join(gpu))
    return parts.captioned_table("Batch sizes", "baseline", names, rows, notes, left=("result",))


def chart_section(p: BaselineProfile) -> str | None:
    xs = tuple(float(x.batch_size) for x in p.points)
    lines = [
        charts.Line("samples/s", xs, tuple(x.samples_per_sec for x in p.points), charts.MODE_COLORS["synthetic"],
                    tuple(None if x.samples_per_sec_ci is None else x.samples_per_sec_ci[0] for x in p.points),
                    tuple(None if x.samples_per_sec_ci is None else x.samples_per_sec_ci[1] for x in p.points)),
        charts.peak_memory_line(xs, [x.peak_memory for x in p.points]),
    ]
    marks = charts.oom_marks([x.batch_size for x in p.points if x.status == OUT_OF_MEMORY])
    svg = charts.xy_chart(lines, "batch size", "samples per second", "baseline", right_label="peak memory (GiB)",
                          marks=marks, log2_x=True, xticks=xs)
    if svg is None:
        return None
    caption = "Throughput (error bars: 95% interval) and peak device memory per batch size, on a log-2 axis."
    return f'<figure class="chart" id="chart-baseline">{svg}<figcaption>{parts.escape(caption)}</figcaption></figure>'


def render_baseline_html(p: BaselineProfile) -> str:
    return parts.page(f"pipediag baseline: {p.model} {p.precision} on {p.backend}/{p.device}", [
        header_section(p), summary_section(p), chart_section(p), table_section(p), parts.notes_list(list(p.notes)),
        f"<h2>Machine</h2>{parts.environment_facts(p.environment)}",
    ])
