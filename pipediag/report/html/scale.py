"""The HTML page of a scale result (`pipediag scale --html`, or `pipediag report X.json --html`).

Same shell and rules as the diagnosis page (`report.html.page`). It shows whether tf.data service
is worth it, what was measured per worker count (with 95% intervals), a chart of throughput
against the worker count next to the step's own rate and this host's local pipeline, the worker
plan per accelerator count with its assumptions, the service's own cost, data visitation and how
the servers ended.
"""

from __future__ import annotations

from pipediag.analysis.modes import ModeSummary
from pipediag.report.html import charts, parts
from pipediag.report.terminal.scale import PLACEMENT_TEXT, WORTH_TEXT, cpu_text, unstable_modes, workers_text
from pipediag.results.scale import ScaleResult

_WORTH_COLORS = {"yes": "#2f855a", "not_needed": "#b7791f", "does_not_scale": "#c53030", "transfer_bound": "#c53030",
                 "unknown": "#4a5568"}


def _rate(m: ModeSummary | None) -> float | None:
    return None if m is None else m.batches_per_sec


def _ci(m: ModeSummary | None) -> tuple[float, float] | None:
    return None if m is None else m.batches_per_sec_ci


def header_section(r: ScaleResult) -> str:
    facts = parts.run_facts(r.step, r.element, r.stages)
    if r.service is not None:
        if r.service.kind == "local":
            workers = [s for s in r.service.servers if s.role == "worker"]
            k = r.settings.get("worker_cores")
            pinned = f", {k} core(s) each, pinned" if workers and all(w.pinned for w in workers) else ", not pinned to cores"
            where = (f"local: a dispatcher and up to {len(workers)} worker processes ({r.service.target}{pinned}); "
                     f"this host has {r.settings.get('host_cores')} core(s)"
                     + (f" to plan with ({r.settings['cpu_limit']})" if r.settings.get("cpu_limit") else ""))
        else:
            where = f"remote deployment {r.service.target}"
        facts.append(("service", f"{where}; processing mode {r.service.processing_mode}"))
    return parts.page_head(f"<h1>pipediag scale <code>{parts.escape(r.target)}</code></h1>", r.status, facts, r.elapsed_s,
                     r.created_at)


def verdict_section(r: ScaleResult) -> str:
    p = r.plan
    if p is None:
        return ('<h2>Capacity plan</h2><div class="verdict" id="verdict"><p class="bottleneck">NO PLAN</p>'
                "<p>The step was not measured with free input, so there is no demand to plan for.</p></div>")
    word = WORTH_TEXT.get(p.worth_it, (p.worth_it.upper(), ""))[0]
    color = _WORTH_COLORS.get(p.worth_it, "#4a5568")
    reasons = "".join(f"<li>{parts.escape(line)}</li>" for line in p.reasons)
    facts = [f"compute {parts.fmt_num(p.compute_batches_per_sec)} batches/s per accelerator ({p.compute_source})"]
    if p.per_worker_batches_per_sec is not None:
        ci = f" (95%: {parts.fmt_interval(p.per_worker_ci)})" if p.per_worker_ci else ""
        facts.append(f"one worker {p.per_worker_batches_per_sec:.1f} batches/s{ci}")
    else:
        facts.append(f"one worker: n/a ({p.per_worker_basis})")
    if p.local_batches_per_sec is not None:
        facts.append(f"this host alone {p.local_batches_per_sec:.1f} batches/s")
    return (f'<h2>Capacity plan</h2><div class="verdict" id="verdict" style="border-color:{color}">'
            f'<p>tf.data service: <span class="bottleneck" style="color:{color}">{parts.escape(word)}</span></p>'
            f'<ul class="evidence">{reasons}</ul><p class="muted">{parts.escape(" · ".join(facts))}</p></div>')


def measured_section(r: ScaleResult) -> str:
    names = ("what", "batches/s", "95% interval", "per worker", "scaling", "worker CPU", "client CPU", "cores")
    rows = []

    def row(what, m, per="", eff="", cpu="", cores=""):
        cells = [parts.fmt_num(_rate(m)), parts.fmt_interval(_ci(m)), per, eff, cpu,
                 parts.fmt_num(None if m is None else m.process_cpu_pct, "{:.0f}%"), cores]
        rows.append(f'<tr><td class="left">{parts.escape(what)}</td>' + "".join(f"<td>{parts.escape(c)}</td>" for c in cells[:-1])
                    + f'<td class="left">{parts.escape(cells[-1])}</td></tr>')

    for key, what in (("synthetic", "synthetic (free input)"), ("local_input_only", "local, no service"),
                      ("transfer", "service, constant batch")):
        cpu = cpu_text(r.overhead.transfer_worker_cpu_pct) if key == "transfer" and r.overhead is not None else ""
        row(what, r.modes.get(key), cpu=cpu)
    points = {p.workers: p for p in (r.plan.scaling if r.plan else ())}
    reasons = []
    for c in r.counts:
        m = c.input_only
        n = c.workers if c.workers is not None else r.settings.get("remote_workers")
        per = None if not _rate(m) or not n else _rate(m) / n
        point = points.get(c.workers)
        cpu = cpu_text(c.worker_cpu_pct)
        if not cpu:
            cpu = "n/a"
            if c.worker_cpu_reason:
                reasons.append(f"{workers_text(c.workers)}: worker CPU n/a: {c.worker_cpu_reason}")
        row(f"{workers_text(c.workers)}: input", m, parts.fmt_num(per, missing=""),
            parts.fmt_num(point.efficiency if point else None, "{:.0%}", ""), cpu, PLACEMENT_TEXT.get(c.placement, c.placement))
        row(f"{workers_text(c.workers)}: step fed", c.fed)
    caption = ["input: the pipeline through the service alone; step fed: feeding the step; — : not measured. "
               "worker CPU: each worker process over the mode, 100% = one core; client: pipediag's own process. "
               "cores: own = each worker on core(s) of its own; shared = the workers fill every core; over = more "
               "worker cores than the host has"] + reasons
    stops = unstable_modes(r)
    if stops:
        caption.append("stopped early or at the cap — " + ", ".join(stops))
    return parts.captioned_table("Measured", "measured", names, rows, caption, left=("what", "cores"))


def scale_chart(r: ScaleResult) -> str | None:
    """Batches/s against the worker count (a remote deployment counts as its --remote-workers);
    the step's free-input rate, the local pipeline and the service's constant-batch ceiling as levels."""
    counts = [(c.workers if c.workers is not None else r.settings.get("remote_workers"), c) for c in r.counts]
    counts = sorted((n, c) for n, c in counts if n)
    if not counts:
        return None
    xs = tuple(float(n) for n, _ in counts)

    def line(label, pick, color, marker, style):
        ms = [pick(c) for _, c in counts]
        return charts.Line(label, xs, tuple(_rate(m) for m in ms), color,
                           tuple(None if _ci(m) is None else _ci(m)[0] for m in ms),
                           tuple(None if _ci(m) is None else _ci(m)[1] for m in ms), marker=marker, style=style)

    lines = [line("through the service, input only", lambda c: c.input_only, charts.MODE_COLORS["input_only"], "o", "-"),
             line("through the service, feeding the step", lambda c: c.fed, charts.MODE_COLORS["pipeline"], "s", "--")]
    levels = []
    for key, label, color in (("synthetic", "the step with free input (one accelerator)", charts.MODE_COLORS["synthetic"]),
                              ("local_input_only", "this host's pipeline, no service", "#8c564b"),
                              ("transfer", "service ceiling: a constant batch", "#7f7f7f")):
        m = r.modes.get(key)
        if _rate(m):
            low, high = _ci(m) or (None, None)
            levels.append(charts.Level(label, m.batches_per_sec, color, low, high, style=":" if key == "transfer" else "--"))
    return charts.xy_chart(lines, "workers", "batches per second", "scale", levels=levels, xticks=xs)


def chart_section(r: ScaleResult) -> str | None:
    svg = scale_chart(r)
    if svg is None:
        return None
    caption = ("Batches/s through tf.data service per worker count (error bars: 95% interval), against the step's "
               "own rate, this host's pipeline without the service and the service's constant-batch ceiling "
               "(shaded: their 95% intervals). A count that was not measured has no point.")
    return f'<figure class="chart" id="chart-scale">{svg}<figcaption>{parts.escape(caption)}</figcaption></figure>'


def plan_section(r: ScaleResult) -> str | None:
    p = r.plan
    if p is None:
        return None
    names = ("accelerators", "need batches/s", "this host alone", "workers", "conservative", "cores", "clients")
    rows = []
    for a in p.accelerators:
        alone = {True: "keeps up", False: "too slow", None: "—"}[a.local_keeps_up]
        cores = parts.fmt_num(a.cores, "{}") + ("" if a.cores_conservative in (None, a.cores) else f"–{a.cores_conservative}")
        cells = [str(a.accelerators), parts.fmt_num(a.demand_batches_per_sec), alone, parts.fmt_num(a.workers, "{}"),
                 parts.fmt_num(a.workers_conservative, "{}"), cores, parts.fmt_num(a.clients, "{}")]
        rows.append("<tr>" + "".join(f"<td>{parts.escape(c)}</td>" for c in cells) + "</tr>")
    assumptions = "".join(f"<li>{parts.escape(line)}</li>" for line in p.assumptions)
    missing = []
    if any(a.workers is None for a in p.accelerators):
        missing.append(f"workers — : {p.per_worker_basis}" if p.per_worker_batches_per_sec is None
                       else "workers — : no demand (the step's rate is unknown)")
    if any(a.clients is None for a in p.accelerators):
        missing.append("clients — : the service's constant-batch ceiling was not measured")
    return (parts.captioned_table("Worker plan", "plan", names, rows, missing, left=("this host alone",))
            + f'<h3>Assumptions</h3><ul id="assumptions">{assumptions}</ul>')


def overhead_section(r: ScaleResult) -> str:
    o = r.overhead
    if o is None:
        return ('<h2>The service\'s own cost</h2><p class="muted" id="overhead">not measured: the run ended before '
                "the service delivered a batch</p>")
    items = []
    if o.transfer_batches_per_sec is not None:
        mib = f", {o.transfer_mib_per_sec:.0f} MiB/s" if o.transfer_mib_per_sec is not None else ""
        items.append(f"a constant batch through the service ({workers_text(o.transfer_workers)}): "
                     f"{o.transfer_batches_per_sec:.1f} batches/s = {parts.fmt_num(o.per_batch_ms, '{:.2f}')} ms per batch{mib}: "
                     "the most one client receives, with no preprocessing at all")
    if o.service_over_local is not None:
        items.append(f"on the same cores ({workers_text(o.equal_cores_workers)} × {r.settings.get('worker_cores')} core vs "
                     f"the local pipeline on all {r.settings.get('host_cores')}): the service delivered "
                     f"{o.service_over_local:.2f}x the local rate")
    elif o.reason:
        items.append(f"service vs local on the same cores: not compared — {o.reason}")
    return f'<h2>The service\'s own cost</h2><ul id="overhead">{"".join(f"<li>{parts.escape(i)}</li>" for i in items)}</ul>'


def service_section(r: ScaleResult) -> str | None:
    pieces = []
    if r.visitation:
        mode = r.service.processing_mode if r.service else r.settings.get("processing_mode", "")
        items = "".join(f"<li>{parts.escape(line)}</li>" for line in r.visitation)
        pieces.append(f'<h3>Data visitation ({parts.escape(mode)})</h3><ul id="visitation">{items}</ul>')
    if r.service is not None and r.service.kind == "local" and r.service.shutdown is not None:
        s = r.service.shutdown
        ports = ("no port left listening" if s.leftover_ports == () else
                 f"ports could not be checked ({s.ports_reason})" if s.leftover_ports is None else
                 f"ports STILL LISTENING: {', '.join(map(str, s.leftover_ports))}")
        procs = "no process left" if not s.leftover_pids else f"processes STILL ALIVE: {', '.join(map(str, s.leftover_pids))}"
        how = ("all ended cleanly" if set(s.ended.values()) == {"clean"}
               else ", ".join(f"{k} {v}" for k, v in s.ended.items() if v != "clean"))
        cls = "muted" if s.clean else "banner"
        pieces.append(f'<p class="{cls}" id="shutdown">tf.data service: {len(s.ended)} process(es) stopped in '
                      f"{s.seconds:.1f} s ({parts.escape(how)}); {parts.escape(procs)}, {parts.escape(ports)}</p>")
    if not pieces:
        return None
    return "<h2>The service</h2>" + "".join(pieces)


def render_scale_html(r: ScaleResult) -> str:
    word = "no plan" if r.plan is None else WORTH_TEXT.get(r.plan.worth_it, (r.plan.worth_it,))[0].lower()
    return parts.page(f"pipediag scale: {word} — {r.target}", [
        header_section(r), verdict_section(r), chart_section(r), measured_section(r), plan_section(r),
        overhead_section(r), service_section(r),
        f"<h2>Pipeline</h2>{parts.stages_table(r.stages)}" if r.stages else None,
        parts.notes_list(list(r.environment.warnings) + list(r.notes)), f"<h2>Machine</h2>{parts.environment_facts(r.environment)}",
    ])
