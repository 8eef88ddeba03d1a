"""A machine profile (`pipediag baseline`) and the comparison of two, as rich renderables."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from pipediag.analysis.baseline import ProfileComparison
from pipediag.records.kinds import OUT_OF_MEMORY
from pipediag.report.common import num, peak_gib
from pipediag.results.baseline import OK, BaselineProfile


def profile_table(p: BaselineProfile) -> Table:
    """GPU columns only when the run had GPU readings (a CPU run has none). A size that did not
    run says so beside its batch size, and why below the table."""
    gpu = any(x.gpu_util_pct is not None for x in p.points)
    gpm = any(x.gpm_sm_active_pct is not None for x in p.points)
    power = any(x.power_w_mean is not None for x in p.points)
    columns = ["batch", "samples/s", "±95%", "p50 ms", "p90 ms", "steps", "compile s", "peak GiB"]
    columns += (["GPU"] if gpu else []) + (["SM act"] if gpm else []) + (["power W"] if power else [])
    table = Table(title="Batch sizes", title_justify="left", pad_edge=False)
    for name in columns:
        table.add_column(name, justify="left" if name == "batch" else "right", no_wrap=True,
                         min_width=len(name))
    for x in p.points:
        half = "" if x.samples_per_sec_ci is None else f"{(x.samples_per_sec_ci[1] - x.samples_per_sec_ci[0]) / 2:.1f}"
        batch = str(x.batch_size) + ("" if x.status == OK else " " + {OUT_OF_MEMORY: "OOM"}.get(x.status, x.status))
        row = [batch, num(x.samples_per_sec), half, num(x.step_ms_p50), num(x.step_ms_p90),
               str(len(x.step_ns)) if x.step_ns else "—", num(None if x.first_step_ms is None else x.first_step_ms / 1e3),
               peak_gib(x.peak_memory)]
        row += ([num(x.gpu_util_pct, "{:.0f}%", "n/a")] if gpu else [])
        row += ([num(x.gpm_sm_active_pct, "{:.0f}%", "n/a")] if gpm else [])
        row += ([num(x.power_w_mean, "{:.0f}", "n/a")] if power else [])
        table.add_row(*row)
    return table


def render_profile(p: BaselineProfile) -> RenderableType:
    head = Text()
    head.append("pipediag baseline", style="bold")
    head.append(f": {p.model_description}, Keras {p.backend} backend on the {p.device}, precision {p.precision}")
    if p.parameters:
        head.append(f", {p.parameters:,} parameters")
    parts: list[RenderableType] = [head, Text(f"why this model: {p.model_reason}", style="dim")]
    budget = p.settings.get("budget_s")
    parts.append(Text(f"synthetic data on the device, first step and {p.settings.get('warmup_steps', 2)} warm-up "
                      f"steps apart; time budget {budget:g} s, each size at most {p.settings.get('window_s'):g} s "
                      f"(--budget, --seconds-per-size); took {p.elapsed_s:.0f} s", style="dim"))
    if p.status != "complete":
        parts.append(Text(f"partial profile: {p.status}", style="bold yellow"))
    parts.append(profile_table(p))
    for x in p.points:
        if x.status != OK:
            error = f" ({x.error.type}: {x.error.message[:160]})" if x.error is not None else ""
            parts.append(Text(f"batch {x.batch_size}: {x.note or x.status.replace('_', ' ')}{error}", style="dim"))
    parts.append(Text.assemble(("Memory: ", "bold"), p.oom_edge.text))
    reasons = sorted({x.peak_memory_reason for x in p.points if x.status == OK and x.peak_memory is None
                      and x.peak_memory_reason})
    if reasons:
        parts.append(Text("peak memory unknown (—): " + "; ".join(reasons), style="dim"))
    if any(x.peak_memory and x.peak_memory.scope == "process" for x in p.points):
        parts.append(Text("≤: the process's peak so far (JAX cannot reset its peak): an upper bound", style="dim"))
    rss = [x for x in p.points if x.rss_max_bytes]
    if rss and p.device == "cpu":
        parts.append(Text("host memory of the process (RSS, max): "
                          + ", ".join(f"{x.batch_size}: {x.rss_max_bytes / 2**30:.2f} GiB" for x in rss), style="dim"))
    for note in p.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    return Group(*parts)


def render_profile_comparison(c: ProfileComparison, label_a: str, label_b: str) -> RenderableType:
    parts: list[RenderableType] = [Text.assemble(("A: ", "bold"), label_a), Text.assemble(("B: ", "bold"), label_b)]
    for line in c.context:
        parts.append(Text(f"differs: {line}", style="dim"))
    table = Table(title="B against A, per batch size", title_justify="left", pad_edge=False)
    for name in ("batch", "throughput B/A", "interval", "step p50 B/A", "interval", "finding"):
        table.add_column(name, justify="left" if name in ("batch", "finding") else "right")
    for s in c.sizes:
        table.add_row(
            str(s.batch_size), num(s.throughput_ratio, "{:.3f}"),
            "—" if s.throughput_low is None else f"[{s.throughput_low:.3f}, {s.throughput_high:.3f}]",
            num(s.step_p50_ratio, "{:.3f}"),
            "—" if s.step_p50_low is None else f"[{s.step_p50_low:.3f}, {s.step_p50_high:.3f}]",
            s.finding,
        )
    if c.sizes:
        parts.append(table)
        level = c.sizes[0].level
        parts.append(Text(f"throughput intervals at {100 * level:.1f}% each (95% over the {len(c.sizes)} sizes "
                          "together); they cover the noise within each run, not a change between the runs", style="dim"))
    for line in c.lines:
        parts.append(Text(line, style="dim"))
    style = "bold green" if c.differs is False else ("bold red" if c.differs else "bold yellow")
    parts.append(Text.assemble(("Verdict: ", "bold"), (c.verdict, style)))
    if c.differs:
        parts.append(Text("the profiles were taken at different times: what changed on the machine between them "
                          "(other tenants, clocks, temperature) shows up here too; profile B again, and A if you can, "
                          "before acting on it", style="yellow"))
    return Group(*parts)
