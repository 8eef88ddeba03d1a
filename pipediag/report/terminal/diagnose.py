"""The terminal report as rich renderables. Functions return renderables; only the CLI prints.

Tests render them to an in-memory Console of fixed width and compare the text.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from pipediag.analysis.gpu import METRIC_LABELS, job_gpus, metrics_seen
from pipediag.report.common import effect_text, num, run_lines, time_text, title, unmeasured_fixes_text
from pipediag.report.terminal.env import limits_rows
from pipediag.results.diagnose import MODE_NAMES, Diagnosis

_VERDICT_STYLE = {"input": "bold yellow", "compute": "bold green", "memory": "bold red", "host": "bold magenta",
                  "inconclusive": "bold white"}


def from_fit(d: Diagnosis) -> bool:
    """Measured inside the user's own `fit` by the Keras InputMonitor: the pipeline mode only."""
    return d.step is not None and d.step.kind == "keras_fit"


def header(d: Diagnosis) -> RenderableType:
    command = "pipediag run" if d.settings.get("source") == "pipediag run" else "pipediag diagnose"
    lines = title(Text(), "pipediag InputMonitor:" if from_fit(d) else command, d.target, d.status)
    lines.append("\n")
    run_lines(lines, d.step, d.element, d.stages, timing=True)
    limits = d.environment.container if d.environment is not None else None
    if limits is not None and (limits.cpu_limited or limits.memory_limit_bytes):
        for label, value in limits_rows(limits):
            lines.append(f"{label}: ", style="dim")
            lines.append(value + "\n")
    facts = []
    if d.cardinality is not None:
        facts.append(f"length: {d.cardinality} batches" if isinstance(d.cardinality, int) else f"length: {d.cardinality}")
    if d.first_batch_ms is not None:
        facts.append(f"first batch: {d.first_batch_ms:.0f} ms")
    if facts:
        lines.append("  ·  ".join(facts) + "\n", style="dim")
    lines.append(time_text(d), style="dim")
    return lines


def throttling_text(d: Diagnosis) -> str | None:
    """`CPU quota throttled: pipeline 63% of periods, input_only 80%`, where a quota was read."""
    parts = []
    for name in MODE_NAMES:
        m = d.modes.get(name)
        t = m.throttling if m is not None else None
        if t is not None and t.throttled_frac is not None:
            parts.append(f"{name} {100 * t.throttled_frac:.0f}%")
    return "CPU quota throttled (share of periods): " + ", ".join(parts) if parts else None


def modes_table(d: Diagnosis) -> Table:
    table = Table(title="Modes", title_justify="left", expand=False, pad_edge=False)
    for name, justify in (("mode", "left"), ("batches/s", "right"), ("±95%", "right"), ("step p50", "right"),
                          ("p90 ms", "right"), ("wait", "right"), ("CPU", "right"), ("GPU", "right"),
                          ("steps", "right")):
        table.add_column(name, justify=justify, no_wrap=True)
    stops, first_steps, decided = [], [], []
    for name in MODE_NAMES:
        m = d.modes.get(name)
        if m is None:
            if not from_fit(d):  # a fit has only the pipeline mode: no empty rows for the others
                table.add_row(name, "—", "", "—", "—", "—", "—", "—", "0")
            continue
        half = ""
        if m.batches_per_sec_ci:
            half = f"{(m.batches_per_sec_ci[1] - m.batches_per_sec_ci[0]) / 2:.1f}"
        wait = "—" if m.input_wait_frac is None or name in ("synthetic", "input_only") else f"{100 * m.input_wait_frac:.0f}%"
        table.add_row(
            name, num(m.batches_per_sec), half, num(m.step_ms_median, "{:.2f}"), num(m.step_ms_p90, "{:.2f}"),
            wait, num(m.cpu_util_pct, "{:.0f}%"), num(m.gpu_util_pct, "{:.0f}%", "n/a"), str(m.steps),
        )
        if m.stop_reason == "decided":
            decided.append(name)
        elif m.stop_reason not in ("stable", "fit_ended"):
            stops.append(f"{name}: {m.stop_reason.replace('_', ' ')}")
        if m.first_step_ms is not None:
            first_steps.append(f"first step (tracing, compiling) {m.first_step_ms:.0f} ms, kept out of the timings")
        if m.new_shape_steps_ms:
            first_steps.append(new_shape_text(m))
    caption = first_steps + ([("stopped early or at the cap — " + ", ".join(stops))] if stops else [])
    if decided:
        caption.append(", ".join(decided) + ": stopped once the verdict's readings were clear of its lines")
    if d.handover is not None:
        caption.append(handover_text(d.handover))
    throttling = throttling_text(d)
    if throttling:
        caption.append(throttling)
    reasons = {m.gpu_util_reason for m in d.modes.values() if m.gpu_util_pct is None and m.gpu_util_reason}
    if reasons:
        caption.append("GPU n/a: " + "; ".join(sorted(reasons)))
    if caption:
        table.caption = "\n".join(caption)
        table.caption_justify = "left"
    return table


def new_shape_text(m) -> str:
    """One line for a mode's steps kept out as the first of a new batch shape (a retrace)."""
    times = ", ".join(f"{ms:.0f} ms" for ms in m.new_shape_steps_ms)
    return (f"{m.name}: first step of each new batch shape (a retrace per input shape): {times}, "
            "kept out of the timings")


def handover_text(h) -> str:
    """One line for the hand-over of an already-produced batch (analysis.handover.Handover)."""
    ci = f" (95% {h.ms_mean_ci[0]:.3f}–{h.ms_mean_ci[1]:.3f})" if h.ms_mean_ci else ""
    copy = (f" + device copy {h.transfer_ms_mean:.3f} ms" if h.transfer_ms_mean is not None
            else f"; no device copy: {h.transfer_text}")
    through = f" through {h.through}" if h.through else ""
    beside = ("" if h.beside_step_fetch_ms_mean is None else
              f"; get_next and conversion with the step run between the calls: {h.beside_step_fetch_ms_mean:.3f} ms "
              f"({h.beside_step_batches} timed)")
    return (f"hand-over of a ready batch{through}: {h.ms_mean:.3f} ms{ci} — get_next and conversion to {h.batch_format} "
            f"{h.fetch_ms_mean:.3f} ms{copy} ({h.batches} timed){beside}")


def _gib(value: int | None) -> str:
    return "—" if value is None else f"{value / 2**30:.2f}"


def _pct(value: float | None) -> str:
    return num(value, "{:.0f}%", "n/a")


def gpu_table(d: Diagnosis) -> Table | None:
    """The GPU per mode in detail: NVML busy time, GPM, power, and the step's peak memory; one row
    per GPU when the job used several. None when the run had no GPU data at all."""
    rows = [(name, d.modes[name]) for name in MODE_NAMES if d.modes.get(name) is not None]
    if not any(m.gpu is not None for _, m in rows):
        return None
    several = any(m.gpus for _, m in rows)
    table = Table(title="GPUs" if several else "GPU", title_justify="left", expand=False, pad_edge=False)
    columns = ("mode",) + (("gpu",) if several else ()) + ("busy", "SM act", "occup", "tensor", "DRAM bw",
                                                           "power W", "peak GiB")
    for name in columns:
        table.add_column(name, justify="left" if name == "mode" else "right", no_wrap=True)
    for name, m in rows:
        windows = m.gpus or (m.gpu,)
        for k, g in enumerate(windows):
            gpm = g.gpm if g else None
            peak = m.peak_memory if k == 0 else None
            cells = [name if k == 0 else ""]
            if several:
                cells.append("—" if g is None or g.index is None else str(g.index))
            cells += [
                _pct(g.util_pct if g else None),
                _pct(gpm.sm_active_pct if gpm else None), _pct(gpm.sm_occupancy_pct if gpm else None),
                _pct(gpm.tensor_active_pct if gpm else None), _pct(gpm.dram_bw_pct if gpm else None),
                num(g.power_w_mean if g else None, "{:.0f}"),
                ("" if k else "—") if peak is None else _gib(peak.bytes) + ("≤" if peak.scope == "process" else ""),
            ]
            table.add_row(*cells)
    notes = _gpu_notes([m for _, m in rows])
    if several:
        notes.insert(0, f"{job_gpus(d.samples)[1] or 'the GPUs sampled'}; the Modes table's GPU column is "
                        "their mean; peak: the mode's, on its first row")
    table.caption = "\n".join(notes)
    table.caption_justify = "left"
    return table


def _bytes(n: float | None) -> str:
    if n is None:
        return "—"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _stage_flags(stage) -> str:
    flags = []
    if stage.parallelism is not None:
        flags.append("parallel AUTOTUNE" if stage.parallelism == -1 else
                     ("serial" if stage.parallelism == 1 else f"parallel {stage.parallelism}"))
    if stage.is_random:
        flags.append("random")
    if stage.has_py_function:
        flags.append("Python")
    if stage.writes_state:
        flags.append("writes state")
    if stage.source_files:
        flags.append(f"{stage.source_files} files")
    return ", ".join(flags)


def _length(cardinality) -> str:
    return {None: "—", "infinite": "∞", "unknown": "?"}.get(cardinality, str(cardinality))


def anatomy_table(d: Diagnosis) -> RenderableType | None:
    """The waterfall: each stage's rate in batches/s of the final pipeline, and the slow stage."""
    a = d.anatomy
    if a is None:
        return None
    stages = {s.index: s for s in d.stages}
    table = Table(title="Anatomy: the pipeline cut after each stage, iterated alone", title_justify="left",
                  expand=False, pad_edge=False)
    table.add_column("stage", justify="left", overflow="fold")
    for name in ("batches/s ±95%", "+ms", "share", "length", "size/el"):
        table.add_column(name, justify="right", no_wrap=True)
    untimed: dict[str, list[str]] = {}  # reason -> the stages it holds for, said once
    for row in a.rows:
        stage = stages.get(row.index)
        name = Text(row.label, style="bold yellow" if row.index == a.bottleneck_index else "")
        flags = _stage_flags(stage) if stage is not None else ""
        if row.index == a.bottleneck_index:
            flags = "◀ slowest" + (f"; {flags}" if flags else "")
        if flags:
            name.append("\n  " + flags, style="yellow" if row.index == a.bottleneck_index else "dim")
        rate = num(row.batches_per_sec)
        if row.batches_per_sec_ci is not None:
            rate += f" ±{(row.batches_per_sec_ci[1] - row.batches_per_sec_ci[0]) / 2:.1f}"
        if row.batches_per_sec is None and row.reason:
            untimed.setdefault(row.reason, []).append(row.label)
        table.add_row(
            name, rate, num(row.added_ms_per_batch, "{:+.2f}"),
            num(None if row.share is None else round(100 * row.share) or 0, "{:.0f}%"),  # never "-0%"
            _length(None if stage is None else stage.cardinality),
            _bytes(None if stage is None else stage.bytes_per_element),
        )
    caption = [f"rates: {a.unit_note}; +ms: time the stage adds to each batch"]
    caption.append(("slow stage: " if a.bottleneck_stage else "no slow stage named: ") + a.reason)
    caption += list(a.notes) + [f"{', '.join(labels)}: {reason}" for reason, labels in untimed.items()]
    table.caption = "\n".join(caption)
    table.caption_justify = "left"
    return table


def _gpu_notes(modes: list) -> list[str]:
    notes = []
    util_sources = sorted({m.gpu.util_source for m in modes if m.gpu and m.gpu.util_source})
    if util_sources:
        names = ["the driver's own samples" if s == "driver_samples" else "nvmlDeviceGetUtilizationRates"
                 for s in util_sources]
        notes.append(f"busy: NVML utilization from {' and '.join(names)} (any kernel running counts)")
    if any(m.gpu and m.gpu.gpm for m in modes):
        notes.append("SM act, occup, tensor, DRAM bw: GPM, how much of the chip worked")
    else:
        reason = next((m.gpu.gpm_reason for m in modes if m.gpu and m.gpu.gpm_reason), "not read")
        notes.append(f"no GPM: {reason}")
    sources = sorted({m.peak_memory.source for m in modes if m.peak_memory})
    if sources:
        upper = any(m.peak_memory and m.peak_memory.scope == "process" for m in modes)
        notes.append("peak: " + "; ".join(sources)
                     + ("; ≤: the process's peak so far (JAX cannot reset it)" if upper else ""))
    else:
        reason = next((m.peak_memory_reason for m in modes if m.peak_memory_reason), None)
        if reason:
            notes.append(f"peak: unknown ({reason})")
    return notes


def metrics_line(d: Diagnosis) -> RenderableType | None:
    """Which GPU metrics this run had, and which it lacked (and why)."""
    seen = metrics_seen(d.samples)
    if seen.no_gpu_reason:
        return None
    text = Text()
    text.append("GPU metrics: ", style="dim")
    names = [METRIC_LABELS.get(k, k) for k in seen.available if k != "memory_total_bytes"]
    text.append(", ".join(names) if names else "none")
    missing = {k: seen.unavailable[k] for k in METRIC_LABELS if k in seen.unavailable}
    if missing:
        text.append("\nnot available: ", style="dim")
        by_reason: dict[str, list[str]] = {}
        for k, reason in missing.items():
            by_reason.setdefault(reason, []).append(METRIC_LABELS[k])
        text.append("; ".join(f"{', '.join(v)} ({r})" for r, v in by_reason.items()))
    return text


def verdict_panel(d: Diagnosis) -> RenderableType:
    v = d.verdict
    if v is None:
        return Panel(Text("no verdict: the run ended before synthetic mode finished"), title="Verdict")
    body = Text()
    body.append(f"{v.bottleneck.upper()}", style=_VERDICT_STYLE.get(v.bottleneck, "bold"))
    body.append(f"  (confidence: {v.confidence})\n", style="dim")
    body.append(v.headline + "\n")
    if v.reason:
        body.append(f"why no verdict: {v.reason}\n", style="italic")
    for line in v.evidence:
        body.append("  • " + line + "\n")
    body.rstrip()
    return Panel(body, title="Verdict", title_align="left")


def fixes_view(d: Diagnosis) -> RenderableType:
    parts: list[RenderableType] = []
    unmeasured = unmeasured_fixes_text(d)
    if unmeasured:
        parts.append(Text(unmeasured, style="yellow"))
    if not d.fixes and not unmeasured:
        parts.append(Text("No fix recommended: no change pipediag could measure or justify would help.", style="dim"))
    for i, fix in enumerate(d.fixes, 1):
        parts.append(Text(f"{i}. {fix.title}", style="bold"))
        basis = Text("   ")
        if fix.measured_speedup is not None:
            basis.append(f"×{fix.measured_speedup:.2f} ", style="bold green")
        basis.append(fix.basis, style="dim")
        parts.append(basis)
        parts.append(Syntax(fix.code, "python", theme="ansi_dark", background_color="default", padding=(0, 3)))
    if d.tuning:
        lines = Text("Tuned mode: ", style="bold")
        ablation = d.ablation
        if ablation is not None and ablation.together_speedup is not None:
            lines.append(f"all applied changes together ×{ablation.together_speedup:.2f}", style="bold")
            against = "the control run: your graph rebuilt, unchanged" if ablation.baseline_run == "control" \
                else "pipeline mode"
            lines.append(f" (training, vs {against})", style="dim")
        lines.append("\n")
        for c in d.tuning:
            mark, style = ("applied", "green") if c.applied else ("left out", "dim")
            lines.append(f"  [{mark}] ", style=style)
            lines.append(c.description)
            effect = None if ablation is None else ablation.effect(c.key)
            if effect is not None and effect.speedup is not None:
                own = "alone" if effect.basis == "alone" else "the only change"
                lines.append(f" — {own} ×{effect.speedup:.2f} ({effect_text(d, c.key, effect.effect)})", style="cyan")
            if c.reason:
                lines.append(f" — {c.reason}", style="dim")
            if c.details.get("check"):
                lines.append(f" — {c.details['check']}", style="dim")
            lines.append("\n")
        if d.tuned_check:
            lines.append(f"  {d.tuned_check}\n", style="dim")
        if d.tried:
            lines.append(
                "  applied but without a measurable gain, so not recommended: " + ", ".join(c.kind for c in d.tried),
                style="yellow",
            )
        lines.rstrip()
        parts.append(lines)
    return Panel(Group(*parts), title="Fixes", title_align="left")


def notes_view(result) -> RenderableType | None:
    """The environment's warnings and the result's notes (a diagnosis or a comparison)."""
    notes = list(result.environment.warnings) + list(result.notes)
    if not notes:
        return None
    text = Text()
    for note in notes:
        text.append("! ", style="yellow")
        text.append(note + "\n")
    text.rstrip()
    return text


def render_diagnosis(d: Diagnosis) -> Group:
    parts = [header(d), modes_table(d)]
    gpu = gpu_table(d)
    if gpu is not None:
        parts.append(gpu)
    metrics = metrics_line(d)
    if metrics is not None:
        parts.append(metrics)
    anatomy = anatomy_table(d)
    if anatomy is not None:
        parts.append(anatomy)
    parts += [verdict_panel(d), fixes_view(d)]
    notes = notes_view(d)
    if notes is not None:
        parts.append(notes)
    return Group(*parts)
