"""The `pipediag compare` report as rich renderables. Functions return renderables; only the CLI
prints. Tests render them to an in-memory Console of fixed width and compare the text."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from pipediag.analysis.compare import RatioInterval
from pipediag.records.kinds import INTERRUPTED, OUT_OF_MEMORY
from pipediag.report.common import num, title
from pipediag.report.terminal.diagnose import notes_view
from pipediag.results.compare import Comparison, SideNumbers
from pipediag.verdict.compare import FASTER, INCONCLUSIVE, NO_DIFFERENCE, SLOWER, gate_text

_STYLE = {FASTER: "bold green", SLOWER: "bold red", NO_DIFFERENCE: "bold white", INCONCLUSIVE: "bold yellow"}
_WORDS = {FASTER: "FASTER", SLOWER: "SLOWER", NO_DIFFERENCE: "NO SIGNIFICANT DIFFERENCE", INCONCLUSIVE: "INCONCLUSIVE"}
STOPS = {  # why the rounds stopped, in words (the HTML page's too)
    "clear": "the answer was clear",
    "round_cap": "round cap reached",
    "time_cap": "time cap reached",
    INTERRUPTED: "interrupted (Ctrl-C)",
    OUT_OF_MEMORY: "a step ran out of memory",
    "input_exhausted": "a side's input ran out",
    "stalled": "a side stalled (no batch or step for the stall timeout)",
    "failed": "a side's code raised (its error follows the report)",
}
_KIND_NAMES = {"fed": "fed step (what training sees)", "input_only": "input only (the pipeline alone)"}


def header(c: Comparison) -> RenderableType:
    t = title(Text(), "pipediag compare", None, c.status)
    t.append("\n")
    for name, side, role in (("A", c.a, "baseline"), ("B", c.b, "change")):
        t.append(f"{name} ({role}): ", style="dim")
        t.append(side.label, style="cyan")
        if side.source == "saved":
            t.append(f"  [saved run: {side.saved_file or 'file'}, {side.saved_created_at or 'date unknown'}]", style="dim")
        t.append("\n")
    if c.step is not None:
        t.append("step: ", style="dim")
        t.append(c.step.description + "\n")
    stages = {name: " → ".join(s.label for s in side.stages) for name, side in (("A", c.a), ("B", c.b))}
    if stages["A"] or stages["B"]:
        if stages["A"] == stages["B"]:
            t.append("pipeline (both): ", style="dim")
            t.append(stages["A"] + "\n")
        else:
            for name in ("A", "B"):
                if stages[name]:
                    t.append(f"pipeline {name}: ", style="dim")
                    t.append(stages[name] + "\n")
    order = "B alone against the saved A" if c.a.source == "saved" else "A and B interleaved: AB, BA, AB, …"
    facts = [f"{len(c.rounds)} round(s) ({order})", f"turns of {c.segment_seconds:.2f} s",
             f"stopped: {STOPS.get(c.stop_reason, c.stop_reason)}", f"took {c.elapsed_s:.1f} s"]
    t.append("  ·  ".join(facts), style="dim")
    return t


def _ratio_cell(iv: RatioInterval | None) -> str:
    return "—" if iv is None else f"{iv.ratio:.3f}× [{iv.low:.3f}, {iv.high:.3f}]"


def sides_table(c: Comparison) -> Table:
    unit = "ex/s" if c.unit == "examples" else "batches/s"
    table = Table(title="Sides", title_justify="left", expand=False, pad_edge=False)
    kinds = list(c.verdicts)
    columns = [("side", "left")]
    if "fed" in kinds:
        columns += [(f"fed {unit}", "right"), ("wait", "right"), ("CPU", "right"), ("GPU", "right")]
    if "input_only" in kinds:
        columns += [(f"input-only {unit}", "right"), ("CPU", "right")]
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True)

    def cells(n: SideNumbers | None, kind: str) -> list[str]:
        if n is None:
            return ["—"] * (4 if kind == "fed" else 2)
        u = n.usage
        cpu = num(u.cpu_util_pct if u else None, "{:.0f}%")
        if kind == "fed":
            wait = num(None if n.input_wait_frac is None else 100 * n.input_wait_frac, "{:.0f}%")
            return [num(n.rate), wait, cpu, num(u.gpu_util_pct if u else None, "{:.0f}%", "n/a")]
        return [num(n.rate), cpu]

    for name in ("A", "B"):
        row = [name + (" (saved)" if name == "A" and c.a.source == "saved" else "")]
        for kind in kinds:
            row += cells(c.sides.get(name, {}).get(kind), kind)
        table.add_row(*row)
    ratios = " · ".join(f"{'fed' if kind == 'fed' else 'input only'} {_ratio_cell(c.intervals.get(kind))}"
                        for kind in kinds)
    reasons = {n.usage.gpu_util_reason for per in c.sides.values() for n in per.values()
               if n.usage is not None and n.usage.gpu_util_pct is None and n.usage.gpu_util_reason}
    throttled = [f"{name} {'fed' if kind == 'fed' else 'input only'} {100 * n.usage.throttling.throttled_frac:.0f}%"
                 for name in ("A", "B") for kind, n in c.sides.get(name, {}).items()
                 if n is not None and n.usage is not None and n.usage.throttling is not None
                 and n.usage.throttling.throttled_frac is not None]
    caption = [f"B/A: {ratios}  ({100 * c.plan.confidence:.0f}% CI)",
               "rates over every counted turn; CPU: all cores, 100% = every core busy"]
    if reasons:
        caption.append("GPU n/a: " + "; ".join(sorted(reasons)))
    if throttled:
        caption.append("CPU quota throttled (share of periods): " + ", ".join(throttled))
    table.caption = "\n".join(caption)
    table.caption_justify = "left"
    return table


def verdict_lines(c: Comparison) -> list[str]:
    """What backs the verdict, a line each: the effect size, the other kind's verdict, the looks,
    an unsettled interval, the gate. Shared by the terminal and the HTML page."""
    v, iv = c.verdict, c.interval
    lines = []
    if iv is not None:
        noise = f"{100 * iv.log_sd:.1f}%"
        effect = f"effect size: {iv.percent:+.1f}% {c.unit}/s"
        if iv.effect_dz is not None:
            what = "the round-to-round spread of B/A" if iv.method == "paired" else "the spread of the rates"
            effect += f"; d = {iv.effect_dz:+.1f} (the change in units of {what}, {noise})"
        lines.append(effect)
    for kind in c.intervals:
        if kind != c.primary:
            other = c.verdicts[kind]
            same_reason = other.verdict == INCONCLUSIVE and v.reason and other.reason == v.reason
            lines.append(f"{_KIND_NAMES[kind]}: {'no verdict either, for the same reason' if same_reason else other.headline}")
    max_rounds = c.plan.max_rounds
    looks = ", ".join(str(n) for n in c.plan.looks())
    lines.append(f"{len(c.rounds)} round(s) of at most {max_rounds}; the data is looked at after {looks} rounds, "
                 f"each look at {100 * c.plan.level:.1f}% so that {100 * c.plan.confidence:.0f}% holds over all looks")
    if iv is not None and v.verdict == NO_DIFFERENCE and not v.equivalent:
        lines.append(f"not settled: B may be anywhere from {100 * (iv.low - 1):+.1f}% to {100 * (iv.high - 1):+.1f}% "
                     "relative to A")
    gate = gate_text(v)
    if gate:
        lines.append("gate: " + gate)
    return lines


def verdict_panel(c: Comparison) -> RenderableType:
    v = c.verdict
    body = Text()
    body.append(_WORDS[v.verdict], style=_STYLE[v.verdict])
    body.append(f"  ({_KIND_NAMES[c.primary]})\n", style="dim")
    body.append(v.headline + "\n")
    if v.reason and v.reason not in v.headline:  # an inconclusive headline already says why
        body.append(f"why no verdict: {v.reason}\n", style="italic")
    lines = verdict_lines(c)
    for line in lines:
        body.append("  • " + line + "\n")
    body.rstrip()
    border = "red" if v.regression else None
    return Panel(body, title="Verdict", title_align="left", border_style=border or "none")


def render_comparison(c: Comparison) -> Group:
    parts = [header(c), sides_table(c), verdict_panel(c)]
    notes = notes_view(c)
    if notes is not None:
        parts.append(notes)
    return Group(*parts)
