"""The sweep report as rich renderables: one row per batch size, then the knee and the OOM edge."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from pipediag.report.common import num, peak_gib, title
from pipediag.results.sweep import OK, Sweep


def sweep_table(s: Sweep) -> Table:
    """GPU and memory columns only when the run had such numbers (a CPU run has neither)."""
    gpu = any(p.gpu_util_pct is not None for p in s.points)
    gpm = any(p.gpm_sm_active_pct is not None for p in s.points)
    memory = any(p.peak_memory is not None for p in s.points)
    columns = ["batch", "examples/s", "±95%", "gain/2x", "fed ex/s", "wait", "step ms"]
    columns += (["GPU"] if gpu else []) + (["SM act"] if gpm else []) + (["peak GiB"] if memory else []) + ["result"]
    table = Table(title="Batch sizes", title_justify="left", expand=False, pad_edge=False)
    for name in columns:
        table.add_column(name, justify="left" if name in ("batch", "result") else "right", no_wrap=True,
                         min_width=len(name))
    gains = {g.to_batch: g for g in s.knee.gains}
    for p in s.points:
        half = ""
        if p.examples_per_sec_ci:
            half = f"{(p.examples_per_sec_ci[1] - p.examples_per_sec_ci[0]) / 2:.0f}"
        gain = gains.get(p.batch_size)
        if p.status == OK:
            result = (p.bottleneck or "") + (" ← knee" if s.knee.batch_size == p.batch_size else "")
        else:
            result = p.status.replace("_", " ")
        row = [
            str(p.batch_size), num(p.examples_per_sec, "{:.0f}"), half,
            "" if gain is None else f"{gain.per_doubling:.2f}x",
            num(p.pipeline_examples_per_sec, "{:.0f}"),
            num(None if p.input_wait_frac is None else 100 * p.input_wait_frac, "{:.0f}%"),
            num(p.step_ms_median, "{:.2f}"),
        ]
        if gpu:
            row.append(num(p.gpu_util_pct, "{:.0f}%", "n/a"))
        if gpm:
            row.append(num(p.gpm_sm_active_pct, "{:.0f}%", "n/a"))
        if memory:
            row.append(peak_gib(p.peak_memory))
        table.add_row(*row, result)
    caption = ["examples/s: the step with free input (synthetic mode); fed ex/s: with the pipeline; "
               "gain/2x: throughput gained per doubling of the batch since the previous size"]
    sources = sorted({p.peak_memory.source for p in s.points if p.peak_memory})
    if sources:
        caption.append("peak: " + "; ".join(sources))
    elif not memory:
        reason = next((p.peak_memory_reason for p in s.points if p.peak_memory_reason), None)
        if reason:
            caption.append(f"peak memory unknown: {reason}")
    table.caption = "\n".join(caption)
    table.caption_justify = "left"
    return table


def summary_text(s: Sweep) -> Text:
    text = Text()
    text.append("knee: ", style="bold")
    if s.knee.batch_size is None:
        text.append("none within the sweep", style="yellow")
    else:
        text.append(f"batch size {s.knee.batch_size}", style="bold green")
        text.append(f" ({s.knee.examples_per_sec:.0f} examples/s)")
    if s.knee.uncertain:
        text.append(" — uncertain: a gain's interval straddles the line", style="yellow")
    text.append(f"\n  {s.knee.reason}\n", style="dim")
    text.append("memory: ", style="bold")
    text.append(s.oom_edge.text + "\n")
    if s.memory_limit is not None:
        for line in s.memory_limit.applied:
            text.append(f"  limit applied: {line}\n", style="dim")
    for note in s.notes:
        text.append("! ", style="yellow")
        text.append(note + "\n")
    text.rstrip()
    return text


def precision_text(s: Sweep) -> str:
    """The model's Keras dtype policy, or why it is unknown."""
    if s.precision is None:
        return f"unknown ({s.precision_reason or 'not recorded'})"
    return f"{s.precision} (the Keras model's dtype policy)"


def render_sweep(s: Sweep) -> RenderableType:
    head = title(Text(), "pipediag sweep", s.target, s.status, tag="partial")
    if s.step is not None:
        head.append("\nstep: ", style="dim")
        head.append(s.step.description)
    head.append("\nprecision: ", style="dim")
    head.append(precision_text(s))
    head.append(f"\nsweep took {s.elapsed_s:.1f} s", style="dim")
    return Group(head, sweep_table(s), summary_text(s))
