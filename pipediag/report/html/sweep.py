"""The HTML page of a batch-size sweep (`pipediag sweep --html`, or `pipediag report X.json --html`).

Same shell and rules as the diagnosis page (`report.html.page`). It shows the knee and the
out-of-memory edge, the table of batch sizes (throughput with its interval, the fed rate, peak
memory, the result at each size) and one chart: throughput and peak memory against batch size.
A size that did not run has no point (a gap), never a 0.
"""

from __future__ import annotations

from pipediag.report.common import peak_gib
from pipediag.report.html import charts, parts
from pipediag.report.terminal.sweep import precision_text
from pipediag.results.sweep import OK, OUT_OF_MEMORY, Sweep


def header_section(s: Sweep) -> str:
    facts = []
    if s.step is not None:
        facts.append(("step", s.step.description))
    facts.append(("precision", precision_text(s)))
    facts.append(("batch sizes", ", ".join(str(p.batch_size) for p in s.points)))
    cap = s.settings.get("max_seconds_per_mode")
    if cap is not None:
        facts.append(("each size", f"synthetic and pipeline modes, at most {cap:g} s each"))
    return parts.page_head(f"<h1>pipediag sweep <code>{parts.escape(s.target)}</code></h1>", s.status, facts, s.elapsed_s,
                     s.created_at)


def summary_section(s: Sweep) -> str:
    k = s.knee
    if k.batch_size is None:
        knee = '<p id="knee"><strong>Knee:</strong> none within the sweep'
    else:
        knee = (f'<p id="knee"><strong>Knee:</strong> batch size <strong>{k.batch_size}</strong> '
                f"({parts.fmt_num(k.examples_per_sec, '{:.0f}')} examples/s)")
    if k.uncertain:
        knee += ' <span class="note">— uncertain: a gain\'s interval straddles the line</span>'
    knee += f'<br><span class="muted">{parts.escape(k.reason)}</span></p>'
    memory = f'<p id="oom-edge"><strong>Memory:</strong> {parts.escape(s.oom_edge.text)}</p>'
    limit = ""
    if s.memory_limit is not None:
        limit = "".join(f'<li class="muted">limit applied: {parts.escape(line)}</li>' for line in s.memory_limit.applied)
        limit = f"<ul>{limit}</ul>" if limit else ""
    return f'<h2>Result</h2><div class="verdict" id="verdict">{knee}{memory}{limit}</div>'


def table_section(s: Sweep) -> str:
    gains = {g.to_batch: g for g in s.knee.gains}
    names = ("batch", "examples/s", "95% interval", "gain/2x", "fed ex/s", "fed 95% interval", "input wait",
             "step ms", "GPU", "peak GiB", "result")
    rows = []
    for p in s.points:
        gain = gains.get(p.batch_size)
        if p.status == OK:
            result = (p.bottleneck or "") + (" ← knee" if s.knee.batch_size == p.batch_size else "")
        else:
            result = p.note or p.status.replace("_", " ")
        if p.error is not None:
            result += f" ({p.error.type}: {p.error.message})"
        cells = [
            str(p.batch_size), parts.fmt_num(p.examples_per_sec, "{:.0f}"), parts.fmt_interval(p.examples_per_sec_ci, "{:.0f}"),
            "" if gain is None else f"{gain.per_doubling:.2f}x",
            parts.fmt_num(p.pipeline_examples_per_sec, "{:.0f}"), parts.fmt_interval(p.pipeline_examples_per_sec_ci, "{:.0f}"),
            parts.fmt_num(None if p.input_wait_frac is None else 100 * p.input_wait_frac, "{:.0f}%"),
            parts.fmt_num(p.step_ms_median, "{:.2f}"), parts.fmt_num(p.gpu_util_pct, "{:.0f}%", "n/a"), peak_gib(p.peak_memory),
        ]
        cls = ' class="slow"' if p.status == OUT_OF_MEMORY else (' class="knee"' if s.knee.batch_size == p.batch_size else "")
        rows.append(parts.result_row(cells, result, cls))
    notes = ["examples/s: the step with free input (synthetic mode); fed ex/s: fed by the pipeline; gain/2x: "
             "throughput gained per doubling of the batch since the previous size; a size that did not run shows —"]
    sources = sorted({p.peak_memory.source for p in s.points if p.peak_memory})
    if sources:
        upper = any(p.peak_memory and p.peak_memory.scope == "process" for p in s.points)
        notes.append("peak: " + "; ".join(sources) + ("; ≤: the process's peak so far" if upper else ""))
    reasons = sorted({p.peak_memory_reason for p in s.points if p.peak_memory is None and p.peak_memory_reason})
    if reasons:
        notes.append("peak memory unknown (—): " + "; ".join(reasons))
    gpu_reasons = sorted({s.environment.gpu_unavailable_reason} - {None}) if not any(
        p.gpu_util_pct is not None for p in s.points) else []
    if gpu_reasons:
        notes.append("GPU n/a: " + "; ".join(gpu_reasons))
    return parts.captioned_table("Batch sizes", "sweep", names, rows, notes, left=("result",))


def sweep_chart(s: Sweep) -> str | None:
    xs = tuple(float(p.batch_size) for p in s.points)
    lows = tuple(None if p.examples_per_sec_ci is None else p.examples_per_sec_ci[0] for p in s.points)
    highs = tuple(None if p.examples_per_sec_ci is None else p.examples_per_sec_ci[1] for p in s.points)
    lines = [
        charts.Line("examples/s, free input (synthetic)", xs, tuple(p.examples_per_sec for p in s.points),
                    charts.MODE_COLORS["synthetic"], lows, highs),
        charts.Line("examples/s, fed by the pipeline", xs, tuple(p.pipeline_examples_per_sec for p in s.points),
                    charts.MODE_COLORS["pipeline"], marker="s", style="--"),
        charts.peak_memory_line(xs, [p.peak_memory for p in s.points]),
    ]
    marks = charts.oom_marks([p.batch_size for p in s.points if p.status == OUT_OF_MEMORY])
    if s.knee.batch_size is not None:
        marks.insert(0, charts.Mark(f"knee: {s.knee.batch_size}", float(s.knee.batch_size), "#2f855a"))
    return charts.xy_chart(lines, "batch size", "examples per second", "sweep", right_label="peak memory (GiB)",
                           marks=marks, log2_x=True, xticks=xs)


def chart_section(s: Sweep) -> str | None:
    svg = sweep_chart(s)
    if svg is None:
        return None
    caption = ("Throughput (error bars: 95% interval) and the step's peak device memory at each batch size, on a "
               "log-2 axis; sizes that did not run have no point.")
    if not any(p.peak_memory is not None for p in s.points):
        caption += " No memory line: the peak was not measured."
    return f'<figure class="chart" id="chart-sweep">{svg}<figcaption>{parts.escape(caption)}</figcaption></figure>'


def render_sweep_html(s: Sweep) -> str:
    knee = "no knee" if s.knee.batch_size is None else f"knee at {s.knee.batch_size}"
    return parts.page(f"pipediag sweep: {knee} — {s.target}", [
        header_section(s), summary_section(s), chart_section(s), table_section(s), parts.notes_list(list(s.notes)),
        f"<h2>Machine</h2>{parts.environment_facts(s.environment)}" if s.environment is not None else None,
    ])
