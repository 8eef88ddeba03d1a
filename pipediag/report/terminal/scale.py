"""The `pipediag scale` report as rich renderables: what was measured, the service's own cost,
the capacity plan with its assumptions, data visitation, and how the servers ended.

Functions return renderables; only the CLI prints.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from pipediag.analysis.modes import ModeSummary
from pipediag.analysis.scale import OVERSUBSCRIBED, OWN_CORES, REMOTE, SHARES_CLIENT_CORES, UNPINNED
from pipediag.report.common import num, run_lines, title
from pipediag.results.scale import ScaleResult

PLACEMENT_TEXT = {
    OWN_CORES: "own",
    SHARES_CLIENT_CORES: "shared",
    OVERSUBSCRIBED: "over",
    UNPINNED: "not pinned",
    REMOTE: "remote",
}
WORTH_TEXT = {
    "yes": ("WORTH IT", "bold green"),
    "not_needed": ("NOT NEEDED", "bold yellow"),
    "does_not_scale": ("NOT WORTH IT: DOES NOT SCALE", "bold red"),
    "transfer_bound": ("NOT WORTH IT: THE CLIENT CANNOT RECEIVE ENOUGH", "bold red"),
    "unknown": ("UNKNOWN", "bold white"),
}


def _half(m: ModeSummary | None) -> str:
    if m is None or not m.batches_per_sec_ci:
        return ""
    return f"{(m.batches_per_sec_ci[1] - m.batches_per_sec_ci[0]) / 2:.1f}"


def unstable_modes(r) -> list[str]:
    """Each mode of a scale run that stopped other than stable, and why ("2 workers input: time cap")."""
    stops = [f"{name}: {m.stop_reason.replace('_', ' ')}" for name, m in r.modes.items() if m.stop_reason != "stable"]
    for c in r.counts:
        for kind, m in (("input", c.input_only), ("step fed", c.fed)):
            if m is not None and m.stop_reason != "stable":
                stops.append(f"{workers_text(c.workers)} {kind}: {m.stop_reason.replace('_', ' ')}")
    return stops


def workers_text(n: int | None) -> str:
    return "deployment" if n is None else f"{n} worker{'s' if n != 1 else ''}"


def cpu_text(values: tuple[float, ...] | None) -> str:
    """Each worker's CPU, or their mean when there are more than two."""
    if not values:
        return ""
    if len(values) <= 2:
        return " ".join(f"{v:.0f}%" for v in values)
    return f"avg {sum(values) / len(values):.0f}%"


def header(r: ScaleResult) -> RenderableType:
    lines = title(Text(), "pipediag scale", r.target, r.status)
    lines.append("\n")
    run_lines(lines, r.step, r.element, r.stages)
    if r.service is not None:
        lines.append("service: ", style="dim")
        if r.service.kind == "local":
            workers = [s for s in r.service.servers if s.role == "worker"]
            k = r.settings.get("worker_cores")
            pinned = f", {k} core{'s' if k != 1 else ''} each, pinned" if workers and all(w.pinned for w in workers) else \
                ", not pinned to cores"
            lines.append(f"local: a dispatcher and up to {len(workers)} worker processes on 127.0.0.1 ({r.service.target}"
                         f"{pinned}); this host has {r.settings.get('host_cores')} core(s)"
                         + (f" to plan with ({r.settings['cpu_limit']})" if r.settings.get("cpu_limit") else ""))
        else:
            lines.append(f"remote deployment {r.service.target}")
        lines.append(f"  ·  processing mode {r.service.processing_mode}\n")
    lines.append(f"scale took {r.elapsed_s:.1f} s", style="dim")
    return lines


def measured_table(r: ScaleResult) -> Table:
    table = Table(title="Measured", title_justify="left", expand=False, pad_edge=False)
    for name, justify in (("what", "left"), ("batches/s", "right"), ("±95%", "right"), ("per worker", "right"),
                          ("scaling", "right"), ("worker CPU", "right"), ("client", "right"), ("cores", "left")):
        table.add_column(name, justify=justify, no_wrap=True)
    rows = (("synthetic", "synthetic (free input)"), ("local_input_only", "local, no service"),
            ("transfer", "service, constant batch"))
    for key, what in rows:
        m = r.modes.get(key)
        cpu = ""
        if key == "transfer" and r.overhead is not None:
            cpu = cpu_text(r.overhead.transfer_worker_cpu_pct)
        table.add_row(what, num(m.batches_per_sec if m else None), _half(m), "", "", cpu,
                      num(m.process_cpu_pct if m else None, "{:.0f}%"), "")
    points = {p.workers: p for p in (r.plan.scaling if r.plan else ())}
    for c in r.counts:
        m = c.input_only
        n = c.workers if c.workers is not None else r.settings.get("remote_workers")
        per = None if m is None or not m.batches_per_sec or not n else m.batches_per_sec / n
        point = points.get(c.workers)
        eff = num(point.efficiency if point else None, "{:.0%}", "")
        cpu = cpu_text(c.worker_cpu_pct) or "n/a"
        table.add_row(f"{workers_text(c.workers)}: input", num(m.batches_per_sec if m else None), _half(m),
                      num(per, missing=""), eff, cpu, num(m.process_cpu_pct if m else None, "{:.0f}%"),
                      PLACEMENT_TEXT.get(c.placement, c.placement))
        f = c.fed
        table.add_row(f"{workers_text(c.workers)}: step fed", num(f.batches_per_sec if f else None), _half(f),
                      "", "", "", num(f.process_cpu_pct if f else None, "{:.0f}%"), "")
    caption = ["input: the pipeline through the service alone; step fed: feeding the step. worker CPU: each "
               "worker process over the mode, 100% = one core; client: pipediag's own process (receiving, and "
               "the step when fed). cores: own = each worker on core(s) of its own, one left for the client; "
               "shared = the workers fill every core; over = more worker cores than the host has"]
    stops = unstable_modes(r)
    if stops:
        caption.append("stopped early or at the cap — " + ", ".join(stops))
    table.caption = "\n".join(caption)
    table.caption_justify = "left"
    return table


def overhead_view(r: ScaleResult) -> RenderableType:
    o = r.overhead
    text = Text()
    text.append("The service's own cost\n", style="bold")
    if o is None:
        text.append("  not measured: the run ended before the service delivered a batch", style="dim")
        return text
    if o.transfer_batches_per_sec is not None:
        mib = f", {o.transfer_mib_per_sec:.0f} MiB/s" if o.transfer_mib_per_sec is not None else ""
        text.append(
            f"  • a constant batch through the service ({workers_text(o.transfer_workers)}): "
            f"{o.transfer_batches_per_sec:.1f} batches/s = {o.per_batch_ms:.2f} ms per batch{mib}: "
            "the most one client receives, with no preprocessing at all\n"
        )
    if o.service_over_local is not None:
        text.append(
            f"  • on the same cores ({workers_text(o.equal_cores_workers)} × {r.settings.get('worker_cores')} core vs the "
            f"local pipeline on all {r.settings.get('host_cores')}): the service delivered "
            f"{o.service_over_local:.2f}x the local rate\n"
        )
    elif o.reason:
        text.append(f"  • service vs local on the same cores: not compared — {o.reason}\n", style="dim")
    text.rstrip()
    return text


def plan_panel(r: ScaleResult) -> RenderableType:
    p = r.plan
    if p is None:
        return Panel(Text("no plan: the step was not measured with free input"), title="Capacity plan", title_align="left")
    body = Text()
    word, style = WORTH_TEXT.get(p.worth_it, (p.worth_it.upper(), "bold"))
    body.append("tf.data service: ", style="bold")
    body.append(word + "\n", style=style)
    for line in p.reasons:
        body.append("  • " + line + "\n")
    facts = [f"compute {num(p.compute_batches_per_sec)} batches/s per accelerator"]
    if p.per_worker_batches_per_sec is not None:
        ci = f" (95% {p.per_worker_ci[0]:.1f}–{p.per_worker_ci[1]:.1f})" if p.per_worker_ci else ""
        facts.append(f"one worker {p.per_worker_batches_per_sec:.1f} batches/s{ci}")
    if p.local_batches_per_sec is not None:
        facts.append(f"this host alone {p.local_batches_per_sec:.1f} batches/s")
    body.append("  " + "  ·  ".join(facts) + "\n", style="dim")
    table = Table(expand=False, pad_edge=False, box=None, padding=(0, 2))
    for name in ("accelerators", "need batches/s", "this host alone", "workers", "conservative", "cores", "clients"):
        table.add_column(name, justify="right" if name != "this host alone" else "left", no_wrap=True)
    for a in p.accelerators:
        alone = {True: "keeps up", False: "too slow", None: "—"}[a.local_keeps_up]
        table.add_row(str(a.accelerators), num(a.demand_batches_per_sec), alone,
                      num(a.workers, "{}"), num(a.workers_conservative, "{}"),
                      num(a.cores, "{}") + ("" if a.cores_conservative in (None, a.cores) else f"–{a.cores_conservative}"),
                      num(a.clients, "{}"))
    assumptions = Text("Assumptions\n", style="bold")
    for line in p.assumptions:
        assumptions.append("  • " + line + "\n", style="dim")
    assumptions.rstrip()
    return Panel(Group(body, table, Text(""), assumptions), title="Capacity plan", title_align="left")


def visitation_panel(r: ScaleResult) -> RenderableType:
    mode = r.service.processing_mode if r.service else r.settings.get("processing_mode")
    body = Text()
    for line in r.visitation:
        body.append("• " + line + "\n")
    body.rstrip()
    return Panel(body, title=f"Data visitation ({mode})", title_align="left")


def shutdown_view(r: ScaleResult) -> RenderableType | None:
    if r.service is None or r.service.kind != "local" or r.service.shutdown is None:
        return None
    s = r.service.shutdown
    text = Text()
    n = len(s.ended)
    ports = ("no port left listening" if s.leftover_ports == () else
             f"ports could not be checked ({s.ports_reason})" if s.leftover_ports is None else
             f"ports STILL LISTENING: {', '.join(map(str, s.leftover_ports))}")
    procs = "no process left" if not s.leftover_pids else f"processes STILL ALIVE: {', '.join(map(str, s.leftover_pids))}"
    ended = {v for v in s.ended.values()}
    how = "all ended cleanly" if ended == {"clean"} else ", ".join(f"{k} {v}" for k, v in s.ended.items() if v != "clean")
    style = "dim" if s.clean else "bold red"
    text.append(f"tf.data service: {n} process(es) stopped in {s.seconds:.1f} s ({how}); {procs}, {ports}", style=style)
    return text


def render_scale(r: ScaleResult) -> RenderableType:
    parts: list[RenderableType] = [header(r), measured_table(r), overhead_view(r), plan_panel(r)]
    if r.visitation:
        parts.append(visitation_panel(r))
    shutdown = shutdown_view(r)
    if shutdown is not None:
        parts.append(shutdown)
    if r.notes:
        notes = Text("Notes\n", style="bold")
        for note in r.notes:
            notes.append("  • " + note + "\n", style="dim")
        notes.rstrip()
        parts.append(notes)
    return Group(*parts)
