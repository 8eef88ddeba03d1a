"""The HTML report: one self-contained file, charts inline as SVG, nothing loaded from the network.

`render_html(diagnosis)` returns the page as a string; only the CLI writes it. The page is a list
of sections, each a small function `section(diagnosis) -> str | None` that returns None when its
data is absent (no verdict yet, no samples, no GPU): a new kind of result adds one function to
`SECTIONS`. Every string that reaches the page goes through `escape()` (HTML-escaped, report.html.parts), because
function names, paths, notes and error messages come from the user's code. A Content-Security-
Policy forbids scripts and every fetch, so even a mistake could not run code or reach the network.
"""

from __future__ import annotations

from collections.abc import Callable

from pipediag.analysis.gpu import job_gpus
from pipediag.report.common import effect_text, time_text, unmeasured_fixes_text
from pipediag.report.html import charts
from pipediag.report.html.parts import (
    environment_facts,
    escape,
    fmt_interval,
    fmt_num,
    page,
    run_facts,
    stages_table,
    table_head,
)
from pipediag.report.terminal.diagnose import from_fit, handover_text, new_shape_text, throttling_text
from pipediag.results.diagnose import MODE_NAMES, Diagnosis

_VERDICT_COLORS = {"input": "#b7791f", "compute": "#2f855a", "memory": "#c53030", "host": "#805ad5",
                   "inconclusive": "#4a5568"}
_MODE_TEXT = {
    "synthetic": "one real batch reused: the step with free input (compute ceiling)",
    "pipeline": "your pipeline feeding the step",
    "input_only": "your pipeline alone, no step (input ceiling)",
    "tuned": "your pipeline rewritten by pipediag, feeding the step",
}


def header_section(d: Diagnosis) -> str:
    tool = "pipediag InputMonitor:" if from_fit(d) else "pipediag diagnose"
    parts = [f"<h1>{tool} <code>{escape(d.target)}</code></h1>"]
    if d.status != "complete":
        parts.append(
            f'<p class="banner" id="partial">{escape(d.status.upper())}: partial report — it shows what was measured '
            "before the run stopped; modes that did not finish are missing.</p>"
        )
    facts = run_facts(d.step, d.element, d.stages)
    if d.cardinality is not None:
        facts.append(("length", f"{d.cardinality} batches" if isinstance(d.cardinality, int) else str(d.cardinality)))
    if d.first_batch_ms is not None:
        facts.append(("first batch", f"{d.first_batch_ms:.0f} ms"))
    facts.append(("took", f"{time_text(d).removeprefix('time: ')}; {d.created_at}"))
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    parts.append(f'<dl class="facts">{rows}</dl>')
    return "\n".join(parts)


def verdict_section(d: Diagnosis) -> str:
    v = d.verdict
    if v is None:
        return ('<h2>Verdict</h2><div class="verdict" id="verdict"><p class="bottleneck">NO VERDICT</p>'
                "<p>The run ended before synthetic mode finished, so there is nothing to compare.</p></div>")
    color = _VERDICT_COLORS.get(v.bottleneck, "#4a5568")
    evidence = "".join(f"<li>{escape(line)}</li>" for line in v.evidence)
    reason = f"<p><em>why no verdict: {escape(v.reason)}</em></p>" if v.reason else ""
    return (
        f'<h2>Verdict</h2><div class="verdict" id="verdict" style="border-color:{color}">'
        f'<p><span class="bottleneck" style="color:{color}">{escape(v.bottleneck.upper())}</span> '
        f'<span class="muted">(confidence: {escape(v.confidence)})</span></p>'
        f"<p>{escape(v.headline)}</p>{reason}<ul class=\"evidence\">{evidence}</ul></div>"
    )


def modes_table(d: Diagnosis) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("mode", "batches/s", "95% interval", "step p50 ms", "p90 ms",
                                             "input wait", "CPU", "GPU", "steps", "stopped"))
    rows = []
    for name in MODE_NAMES:
        m = d.modes.get(name)
        if m is None and from_fit(d):
            continue
        if m is None:
            rows.append(f'<tr><td title="{escape(_MODE_TEXT[name])}">{name}</td>' + "<td>—</td>" * 7 + "<td>0</td><td>not run</td></tr>")
            continue
        ci = "" if not m.batches_per_sec_ci else f"{m.batches_per_sec_ci[0]:.1f} – {m.batches_per_sec_ci[1]:.1f}"
        wait = "—" if m.input_wait_frac is None or name in ("synthetic", "input_only") else f"{100 * m.input_wait_frac:.0f}%"
        cells = [fmt_num(m.batches_per_sec), ci, fmt_num(m.step_ms_median, "{:.2f}"), fmt_num(m.step_ms_p90, "{:.2f}"), wait,
                 fmt_num(m.cpu_util_pct, "{:.0f}%"), fmt_num(m.gpu_util_pct, "{:.0f}%", "n/a"), str(m.steps),
                 m.stop_reason.replace("_", " ")]
        rows.append(f'<tr><td title="{escape(_MODE_TEXT.get(name, name))}">{escape(name)}</td>'
                    + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return f'<table id="modes"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def throughput_section(d: Diagnosis) -> str | None:
    if not any(m.batches_per_sec for m in d.modes.values()):
        return None
    bars = []
    for name in MODE_NAMES:
        m = d.modes.get(name)
        if m is None or not m.batches_per_sec:
            continue
        low, high = m.batches_per_sec_ci if m.batches_per_sec_ci else (None, None)
        bars.append(charts.Bar(name, m.batches_per_sec, low, high, charts.MODE_COLORS.get(name, "#4c72b0")))
    svg = charts.bar_chart(bars, "batches per second (error bars: 95% interval of the mean rate)", "throughput")
    first = [f"first step (tracing, compiling) {m.first_step_ms:.0f} ms, kept out of the timings"
             for m in d.modes.values() if m.first_step_ms is not None]
    first += [new_shape_text(m) for m in d.modes.values() if m.new_shape_steps_ms]
    caption = "Throughput of each mode with its 95% interval. " + " ".join(first)
    handover = "" if d.handover is None else f'<p id="handover">{escape(handover_text(d.handover))}</p>'
    throttled = throttling_text(d)
    if throttled:
        handover += f'<p id="throttling">{escape(throttled)}</p>'
    return (f"<h2>Modes</h2>{modes_table(d)}{handover}"
            f'<figure class="chart" id="chart-throughput">{svg}<figcaption>{escape(caption)}</figcaption></figure>')


def gpu_missing_reason(d: Diagnosis) -> str | None:
    """Why no GPU utilization line can be drawn at all, or None when some GPU reading exists."""
    if any(g.util_pct is not None for s in d.samples.samples for g in s.gpus):
        return None
    return (d.samples.gpu_unavailable_reason or d.samples.gpu_metric_reasons.get("util_pct")
            or "no GPU readings were taken")


def utilization_panels(d: Diagnosis) -> list[charts.Panel]:
    """One panel per measured mode: CPU (all cores, and this process) and each GPU over the
    mode's timed window. A GPU appears only where it has readings; a missing reading is a gap."""
    panels = []
    for name in MODE_NAMES:
        run = d.runs.get(name)
        if run is None:
            continue
        samples = d.samples.between(run.start_ns, run.end_ns)
        if not samples:
            continue
        times = tuple((s.time_ns - run.start_ns) / 1e9 for s in samples)
        cores = len(samples[0].cpu.per_core_pct) or 1
        series = [
            charts.Series("CPU, all cores", times, tuple(s.cpu.total_pct for s in samples), charts.CPU_COLOR),
            charts.Series("this process", times, tuple(min(100.0, s.cpu.process_pct / cores) for s in samples),
                          charts.PROCESS_COLOR, width=1.0),
        ]
        indices = sorted({g.index for s in samples for g in s.gpus})
        for k, index in enumerate(indices):
            values = tuple(next((g.util_pct for g in s.gpus if g.index == index), None) for s in samples)
            if any(v is not None for v in values):
                series.append(charts.Series(f"GPU {index}", times, values, charts.GPU_COLORS[k % len(charts.GPU_COLORS)]))
        panels.append(charts.Panel(f"{name} — {_MODE_TEXT.get(name, name)}", tuple(series)))
    return panels


def utilization_section(d: Diagnosis) -> str | None:
    panels = utilization_panels(d)
    if not panels:
        return None
    svg = charts.timeline_chart(panels, "% busy", "utilization")
    missing = gpu_missing_reason(d)
    gpu = (f'<p class="note" id="gpu-missing">GPU: not measured ({escape(missing)}) — so no GPU line is drawn: a '
           "reading that could not be taken is not 0%.</p>") if missing else ""
    caption = ("CPU busy % of all cores and of this process (100% = every core), and NVML GPU utilization "
               f"(a kernel ran during the sample), sampled every {d.samples.interval_s * 1000:.0f} ms.")
    return (f"<h2>CPU and GPU over time</h2>{gpu}"
            f'<figure class="chart" id="chart-utilization">{svg}<figcaption>{escape(caption)}</figcaption></figure>')


def gpus_section(d: Diagnosis) -> str | None:
    """Each GPU the job used, per mode: only when it used more than one (one GPU reads as before)."""
    rows = [(name, d.modes[name]) for name in MODE_NAMES if d.modes.get(name) is not None and d.modes[name].gpus]
    if not rows:
        return None
    head = table_head(("mode", "GPU", "UUID", "busy", "95% interval", "SM act", "tensor", "DRAM bw", "power W"),
                      left=("mode", "UUID"))
    body = []
    for name, m in rows:
        for k, g in enumerate(m.gpus):
            gpm = g.gpm
            cells = ["" if g.index is None else str(g.index), g.uuid or "—", fmt_num(g.util_pct, "{:.0f}%", "n/a"),
                     fmt_interval(g.util_pct_ci, "{:.0f}"),
                     fmt_num(gpm.sm_active_pct if gpm else None, "{:.0f}%", "n/a"),
                     fmt_num(gpm.tensor_active_pct if gpm else None, "{:.0f}%", "n/a"),
                     fmt_num(gpm.dram_bw_pct if gpm else None, "{:.0f}%", "n/a"), fmt_num(g.power_w_mean, "{:.0f}")]
            tds = "".join(f'<td class="left">{escape(c)}</td>' if i == 1 else f"<td>{escape(c)}</td>"
                          for i, c in enumerate(cells))
            body.append(f'<tr><td class="left">{escape(name) if k == 0 else ""}</td>{tds}</tr>')
    caption = (f"{job_gpus(d.samples)[1] or 'The GPUs sampled'}. busy: NVML utilization (a kernel ran); SM act, "
               "tensor, DRAM bw: GPM, how much of the chip worked. The Modes table's GPU column is their mean.")
    return (f'<h2>GPUs</h2><table id="gpus">{head}<tbody>{"".join(body)}</tbody></table>'
            f'<p class="note">{escape(caption)}</p>')


def pipeline_section(d: Diagnosis) -> str | None:
    if not d.stages:
        return None
    return f"<h2>Pipeline</h2>{stages_table(d.stages)}"


def waterfall_section(d: Diagnosis) -> str | None:
    """The anatomy: the pipeline cut after each stage and iterated alone, its rate in batches/s of
    the final pipeline, and the slow stage drawn in red. A stage that could not be timed has no
    bar and says why in the table (its rate is unknown, not 0)."""
    a = d.anatomy
    if a is None or not a.rows:
        return None
    slow = a.bottleneck_index
    bars = [charts.Bar(r.label, r.batches_per_sec, *(r.batches_per_sec_ci or (None, None)),
                       color=charts.SLOW_COLOR if r.index == slow else charts.STAGE_COLOR)
            for r in a.rows if r.batches_per_sec is not None]
    svg = charts.bar_chart(bars, "batches per second after each stage (error bars: 95% interval)", "waterfall")
    rows = []
    for r in a.rows:
        mark = ' class="slow"' if r.index == slow else ""
        flag = ' <strong>◀ slowest</strong>' if r.index == slow else ""
        if r.batches_per_sec is None:
            rate = f'<span class="muted" title="{escape(r.reason or "not timed")}">n/a</span>'
        else:
            rate = escape(fmt_num(r.batches_per_sec))
        rows.append(
            f'<tr{mark}><td class="left"><code>{escape(r.label)}</code>{flag}</td><td>{rate}</td>'
            f"<td>{escape(fmt_interval(r.batches_per_sec_ci))}</td><td>{escape(fmt_num(r.added_ms_per_batch, '{:+.2f}'))}</td>"
            f"<td>{escape(fmt_num(None if r.share is None else 100 * r.share, '{:.0f}%'))}</td>"
            f'<td class="left">{escape(r.reason or "")}</td></tr>'
        )
    verdict = (f'<p>Slow stage: <code class="slow">{escape(a.bottleneck_stage)}</code> — {escape(a.reason)}</p>'
               if a.bottleneck_stage else f"<p>No slow stage named: {escape(a.reason)}</p>")
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in a.notes)
    caption = (f"Rates: {a.unit_note}. Each bar is the pipeline cut after that stage, iterated alone (no step); "
               f"the slow stage is red. +ms: the time the stage adds to each batch.")
    figure = (f'<figure class="chart" id="chart-waterfall">{svg}<figcaption>{escape(caption)}</figcaption></figure>'
              if svg else "")
    head = table_head(("stage", "batches/s", "95% interval", "+ms/batch", "share", "note"), left=("stage", "note"))
    return (f"<h2>Anatomy: the rate after each stage</h2>{verdict}{notes}{figure}"
            f'<table id="waterfall">{head}<tbody>{"".join(rows)}</tbody></table>')


_EFFECT_TEXT = {"gain": "gain", "none": "no clear effect", "harm": "slower", "unsafe": "unsafe: output differs",
                "unmeasured": "not measured"}


def ablation_section(d: Diagnosis) -> str | None:
    """Each tuned-mode change alone against the control run (the user's graph rebuilt with no
    change, run before and after the alone runs), all feeding the step; and all together."""
    ab = d.ablation
    if ab is None:
        return None
    describe = {c.key: c.description for c in d.tuning}
    if ab.baseline_run != "control":
        base = "pipeline mode (no control run)"
    elif any(v.role == "alone" for v in ab.variants):
        base = "the control run (no change, before and after the alone runs)"
    else:
        base = "the control run (no change, right before the tuned run)"
    intro = (f"<p>Every run feeds the step, each for at most {ab.window_s:.1f} s. Baseline: {escape(base)}, "
             f"{escape(fmt_num(ab.baseline_batches_per_sec))} batches/s (95%: {escape(fmt_interval(ab.baseline_ci))}).</p>")
    head = table_head(("change", "speedup", "95% interval", "measured", "effect", "without it", "why"),
                      left=("change", "effect", "why"))
    rows = []
    for e in ab.effects:
        name = f"<code>{escape(e.kind)}</code>" + (f" on <code>{escape(e.stage)}</code>" if e.stage else "")
        title = describe.get(e.change)
        speed = "—" if e.speedup is None else f"×{e.speedup:.2f}"
        basis = {"alone": "alone", "only change": "the only change", "none": "—"}.get(e.basis, e.basis)
        without = "" if e.without_speedup is None else f"×{e.without_speedup:.2f} ({fmt_interval(e.without_ci, '{:.2f}')})"
        why = e.reason or ("" if e.speedup is not None else "no rate")
        tip = f' title="{escape(title)}"' if title else ""
        shown = effect_text(d, e.change, e.effect)
        rows.append(
            f'<tr class="effect-{escape(e.effect if shown == e.effect else "none")}"><td class="left"{tip}>{name}</td>'
            f"<td>{escape(speed)}</td><td>{escape(fmt_interval(e.speedup_ci, '{:.2f}'))}</td>"
            f'<td>{escape(basis)}</td><td class="left">{escape(_EFFECT_TEXT.get(shown, shown))}</td>'
            f'<td>{escape(without)}</td><td class="left">{escape(why)}</td></tr>'
        )
    together = ""
    if ab.together_speedup is not None:
        together = (f"<p>All applied changes together: <strong>×{ab.together_speedup:.2f}</strong> "
                    f"(95%: {escape(fmt_interval(ab.together_ci, '{:.2f}'))}).</p>")
    runs = []
    for v in ab.variants:
        state = v.error or v.stop_reason or ""
        check = "" if v.check_ok is None else ("output checked" if v.check_ok else f"output differs: {v.check or ''}")
        runs.append(f'<tr><td class="left">{escape(v.name)}</td><td class="left">{escape(v.role)}</td>'
                    f"<td>{escape(fmt_num(v.batches_per_sec))}</td><td>{escape(fmt_interval(v.batches_per_sec_ci))}</td>"
                    f'<td>{v.steps}</td><td class="left">{escape(state.replace("_", " "))}</td>'
                    f'<td class="left">{escape(check)}</td></tr>')
    runs_head = table_head(("run", "role", "batches/s", "95% interval", "steps", "ended", "check"),
                           left=("run", "role", "ended", "check"))
    return (f"<h2>Ablation: what each change gives on its own</h2>{intro}"
            f'<table id="ablation">{head}<tbody>{"".join(rows)}</tbody></table>{together}'
            '<p class="muted">speedup: the run with that change alone over the baseline (training throughput); '
            "gain needs the intervals apart and at least 5%. without it: all together over all but this change.</p>"
            f'<details><summary>the runs</summary><table id="ablation-runs">{runs_head}'
            f'<tbody>{"".join(runs)}</tbody></table></details>')


def fixes_section(d: Diagnosis) -> str:
    parts = ['<h2>Fixes</h2><div id="fixes">']
    unmeasured = unmeasured_fixes_text(d)
    if unmeasured:
        parts.append(f'<p class="note" id="fixes-unmeasured">{escape(unmeasured)}</p>')
    if not d.fixes and not unmeasured:
        parts.append('<p class="muted">No fix recommended: no change pipediag could measure or justify would help.</p>')
    for i, fix in enumerate(d.fixes, 1):
        speed = ""
        if fix.measured_speedup is not None:
            ci = f" (95%: {fix.speedup_ci[0]:.2f}–{fix.speedup_ci[1]:.2f})" if fix.speedup_ci and None not in fix.speedup_ci else ""
            speed = f'<span class="measured">×{fix.measured_speedup:.2f}{ci}</span> '
        stage = f' <span class="muted">stage <code>{escape(fix.stage)}</code></span>' if fix.stage else ""
        parts.append(f'<div class="fix"><h3>{i}. {escape(fix.title)}{stage}</h3><p>{speed}{escape(fix.basis)}</p>'
                     f'<pre><code>{escape(fix.code)}</code></pre></div>')
    if d.tuning:
        items = []
        for c in d.tuning:
            mark = "applied" if c.applied else "left out"
            reason = f' <span class="muted">— {escape(c.reason)}</span>' if c.reason else ""
            effect = None if d.ablation is None else d.ablation.effect(c.key)
            own = ""
            if effect is not None and effect.speedup is not None:
                alone = "alone" if effect.basis == "alone" else "the only change"
                own = f' <span class="measured">— {alone} ×{effect.speedup:.2f} ({escape(effect.effect)})</span>'
            items.append(f"<li><strong>[{mark}]</strong> {escape(c.description)}{own}{reason}</li>")
        parts.append(f"<h3>Tuned mode</h3><ul>{''.join(items)}</ul>")
        if d.tuned_check:
            parts.append(f'<p class="muted">{escape(d.tuned_check)}</p>')
        if d.tried:
            parts.append(f'<p class="note">Applied but without a measurable gain, so not recommended: '
                         f'{escape(", ".join(c.kind for c in d.tried))}</p>')
    parts.append("</div>")
    return "".join(parts)


def notes_section(d: Diagnosis) -> str | None:
    notes = list(d.environment.warnings) + list(d.notes)
    errors = [f"{m.name} mode stopped on {m.error.type} ({m.error.framework}): {m.error.message}"
              for m in d.modes.values() if m.error is not None]
    if not notes and not errors:
        return None
    items = "".join(f'<li class="note">{escape(n)}</li>' for n in notes)
    items += "".join(f"<li><pre>{escape(e)}</pre></li>" for e in errors)
    return f'<h2>Notes</h2><ul id="notes">{items}</ul>'


def environment_section(d: Diagnosis) -> str:
    return f"<h2>Machine</h2>{environment_facts(d.environment)}"


Section = Callable[[Diagnosis], "str | None"]
SECTIONS: tuple[Section, ...] = (
    header_section, verdict_section, throughput_section, utilization_section, gpus_section, pipeline_section,
    waterfall_section,
    fixes_section, ablation_section, notes_section, environment_section,
)


def render_html(d: Diagnosis, sections: tuple[Section, ...] = SECTIONS) -> str:
    title = f"pipediag: {d.verdict.bottleneck if d.verdict else 'no verdict'} — {d.target}"
    return page(title, [section(d) for section in sections])
