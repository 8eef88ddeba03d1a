"""The HTML page of a comparison (`pipediag compare --html`, or `pipediag report X.json --html`).

Same shell and rules as the diagnosis page (`report.html.page`): self-contained, charts inline as
SVG, no script, every user string escaped. It shows the verdict with its interval, each side's
throughput (fed step and input only) with a 95% interval, the per-round B/A ratios against that
interval, and the two pipelines' stages.
"""

from __future__ import annotations

import math

from pipediag import stats
from pipediag.report.html import charts, parts
from pipediag.report.terminal.compare import STOPS, verdict_lines
from pipediag.results.compare import Comparison
from pipediag.verdict.compare import FASTER, INCONCLUSIVE, NO_DIFFERENCE, SLOWER

_WORDS = {FASTER: "FASTER", SLOWER: "SLOWER", NO_DIFFERENCE: "NO SIGNIFICANT DIFFERENCE", INCONCLUSIVE: "INCONCLUSIVE"}
_COLORS = {FASTER: "#2f855a", SLOWER: "#c53030", NO_DIFFERENCE: "#4a5568", INCONCLUSIVE: "#b7791f"}
_KIND_NAMES = {"fed": "fed step (what training sees)", "input_only": "input only (the pipeline alone)"}
_KIND_COLORS = {"fed": "#dd8452", "input_only": "#55a868"}


def side_rates(c: Comparison, side: str, kind: str) -> tuple[float, ...]:
    """The rates a side's interval rests on: one per round (each a turn of about the same length),
    or for a saved A the chunks of its saved run that the unpaired interval used."""
    if side == "A" and c.a.source == "saved":
        return tuple(c.baseline_chunks.get(kind, ()))
    return tuple(r.rates[kind][side] for r in c.rounds if side in r.rates.get(kind, {}))


def side_interval(c: Comparison, side: str, kind: str) -> tuple[tuple[float, float] | None, str | None]:
    """95% interval of the side's mean per-turn rate, or (None, why not)."""
    rates = side_rates(c, side, kind)
    ci = stats.mean_ci(rates)
    if ci is None:
        return None, f"{len(rates)} turn(s): an interval needs at least 3"
    return ci, None


def header_section(c: Comparison) -> str:
    facts = []
    for name, side, role in (("A", c.a, "baseline"), ("B", c.b, "change")):
        saved = f"  (saved run: {side.saved_file or 'file'}, {side.saved_created_at or 'date unknown'})" \
            if side.source == "saved" else ""
        facts.append((f"{name} ({role})", side.label + saved))
    if c.step is not None:
        facts.append(("step", c.step.description))
    order = "B alone against the saved A" if c.a.source == "saved" else "A and B interleaved: AB, BA, AB, …"
    facts.append(("rounds", f"{len(c.rounds)} ({order}), turns of {c.segment_seconds:.2f} s"))
    facts.append(("stopped", STOPS.get(c.stop_reason, c.stop_reason)))
    heading = f"<h1>pipediag compare <code>{parts.escape(c.a.label)}</code> → <code>{parts.escape(c.b.label)}</code></h1>"
    return parts.page_head(heading, c.status, facts, c.elapsed_s, c.created_at)


def verdict_section(c: Comparison) -> str:
    v, iv = c.verdict, c.interval
    color = _COLORS.get(v.verdict, "#4a5568")
    if iv is None:
        ratio = '<p id="ratio">B/A: <strong>n/a</strong> — no interval</p>'
    else:
        ratio = (f'<p id="ratio">B/A = <strong>{iv.ratio:.3f}×</strong> ({iv.percent:+.1f}%), '
                 f"{100 * iv.confidence:.0f}% interval <strong>{iv.low:.3f} – {iv.high:.3f}</strong> "
                 f'<span class="muted">({parts.escape(iv.method)}, {iv.rounds} rounds)</span></p>')
    lines = verdict_lines(c)
    said = v.reason and v.reason not in v.headline  # an inconclusive headline already says why
    reason = f"<p><em>why no verdict: {parts.escape(v.reason)}</em></p>" if said else ""
    items = "".join(f"<li>{parts.escape(line)}</li>" for line in lines)
    return (f'<h2>Verdict</h2><div class="verdict" id="verdict" style="border-color:{color}">'
            f'<p><span class="bottleneck" style="color:{color}">{_WORDS.get(v.verdict, parts.escape(v.verdict.upper()))}</span> '
            f'<span class="muted">({parts.escape(_KIND_NAMES.get(c.primary, c.primary))})</span></p>'
            f"<p>{parts.escape(v.headline)}</p>{ratio}{reason}<ul>{items}</ul></div>")


def sides_section(c: Comparison) -> str:
    unit = "examples/s" if c.unit == "examples" else "batches/s"
    kinds = list(c.verdicts)
    names = ["side"]
    if "fed" in kinds:
        names += [f"fed {unit}", "fed 95% interval", "input wait", "CPU", "GPU"]
    if "input_only" in kinds:
        names += [f"input-only {unit}", "input-only 95% interval", "input-only CPU"]
    missing: list[str] = []
    rows = []
    for side in ("A", "B"):
        label = side + (" (saved)" if side == "A" and c.a.source == "saved" else "")
        cells = []
        for kind in kinds:
            n = c.sides.get(side, {}).get(kind)
            ci, why = side_interval(c, side, kind)
            if n is None or n.rate is None:
                cells += ["—"] * (5 if kind == "fed" else 3)
                missing.append(f"{side} {kind.replace('_', ' ')}: not measured ({len(c.rounds)} round(s) counted; "
                               "the first turn of each side is a probe, never counted)")
                continue
            if ci is None:
                missing.append(f"{side} {kind.replace('_', ' ')} interval n/a: {why}")
            u = n.usage
            cpu = parts.fmt_num(u.cpu_util_pct if u else None, "{:.0f}%")
            if kind == "fed":
                wait = parts.fmt_num(None if n.input_wait_frac is None else 100 * n.input_wait_frac, "{:.0f}%")
                gpu = parts.fmt_num(u.gpu_util_pct if u else None, "{:.0f}%", "n/a")
                if u is not None and u.gpu_util_pct is None and u.gpu_util_reason:
                    missing.append(f"GPU n/a: {u.gpu_util_reason}")
                cells += [parts.fmt_num(n.rate), parts.fmt_interval(ci) if ci else "n/a", wait, cpu, gpu]
            else:
                cells += [parts.fmt_num(n.rate), parts.fmt_interval(ci) if ci else "n/a", cpu]
        rows.append(f'<tr><td>{parts.escape(label)}</td>' + "".join(f"<td>{parts.escape(x)}</td>" for x in cells) + "</tr>")
    ratios = []
    for kind in kinds:
        iv = c.intervals.get(kind)
        ratios.append(f"{_KIND_NAMES.get(kind, kind)}: "
                      + ("n/a (no interval)" if iv is None else f"{iv.ratio:.3f}× [{iv.low:.3f}, {iv.high:.3f}]"))
    notes = "".join(f'<li class="muted">{parts.escape(m)}</li>' for m in dict.fromkeys(missing))
    return (f'<h2>Sides</h2><table id="sides">{parts.table_head(tuple(names))}<tbody>{"".join(rows)}</tbody></table>'
            f'<p id="ratios">B/A: {parts.escape(" · ".join(ratios))}</p>'
            '<p class="muted">Rates over every counted turn. A side\'s interval is the 95% interval of its mean '
            "per-turn rate (per saved chunk for a saved run): it includes the machine's drift from round to round, "
            "which the paired B/A interval cancels — so overlapping side intervals do not mean no difference. "
            "CPU: all cores, 100% = every core busy.</p>"
            + (f"<ul>{notes}</ul>" if notes else ""))


def rounds_chart(c: Comparison) -> str | None:
    """Paired: each round's B/A against the interval (band) and 1 (no difference). Against a
    saved run there is no per-round ratio: B's per-turn rates and A's saved chunks instead."""
    if c.a.source == "saved":
        lines = []
        for side, color in (("A", "#4c72b0"), ("B", "#dd8452")):
            rates = side_rates(c, side, c.primary)
            lines.append(charts.Line(f"{side}{' (saved chunks)' if side == 'A' else ' (turns)'}",
                                     tuple(range(1, len(rates) + 1)), rates, color, style="none"))
        unit = "examples/s" if c.unit == "examples" else "batches/s"
        return charts.xy_chart(lines, "turn (B) or chunk of the saved run (A)", f"{c.primary.replace('_', ' ')} {unit}",
                               "comparison-rates")
    lines, levels = [], []
    for kind in c.intervals:
        xs, ys = [], []
        for r in c.rounds:
            per = r.rates.get(kind, {})
            a, b = per.get("A"), per.get("B")
            xs.append(r.index + 1)
            ys.append(b / a if a and b and math.isfinite(b / a) else None)
        lines.append(charts.Line(f"B/A {kind.replace('_', ' ')}, per round", tuple(xs), tuple(ys),
                                 _KIND_COLORS.get(kind, "#4c72b0"), style=":" if kind != c.primary else "-"))
    iv = c.interval
    levels.append(charts.Level("B = A", 1.0, "#222222", style="-"))
    if iv is not None:
        levels.append(charts.Level(f"B/A {iv.ratio:.3f}, {100 * iv.confidence:.0f}% interval (band)", iv.ratio,
                                   _KIND_COLORS.get(c.primary, "#4c72b0"), iv.low, iv.high))
    return charts.xy_chart(lines, "round", "B / A throughput", "comparison-rounds", levels=levels,
                           xticks=[r.index + 1 for r in c.rounds] if len(c.rounds) <= 20 else None, from_zero=False)


def rounds_section(c: Comparison) -> str | None:
    if not c.rounds:
        return None
    svg = rounds_chart(c)
    kinds = list(c.intervals)
    rows = []
    for r in c.rounds:
        cells = [str(r.index + 1), r.order]
        for kind in kinds:
            per = r.rates.get(kind, {})
            a, b = per.get("A"), per.get("B")
            cells += [parts.fmt_num(a), parts.fmt_num(b), "—" if not a or b is None else f"{b / a:.3f}"]
        rows.append("<tr>" + "".join(f"<td>{parts.escape(x)}</td>" for x in cells) + "</tr>")
    names = ["round", "order"]
    for kind in kinds:
        k = "fed" if kind == "fed" else "input only"
        names += [f"A {k}", f"B {k}", f"B/A {k}"]
    if c.a.source == "saved":
        caption = ("Against a saved run there are no pairs: the interval is Welch's, from B's turns and the saved "
                   "run's chunks shown here.")
    else:
        caption = ("Each point is one round's B/A (A and B back to back, order alternating); the band is the "
                   f"{100 * c.plan.confidence:.0f}% interval of their geometric mean, the line at 1 is no difference.")
    figure = f'<figure class="chart" id="chart-rounds">{svg}<figcaption>{parts.escape(caption)}</figcaption></figure>' if svg else ""
    return (f"<h2>Rounds</h2>{figure}<details><summary>every round</summary>"
            f'<table id="rounds">{parts.table_head(tuple(names), left=("order",))}<tbody>{"".join(rows)}</tbody></table></details>')


def pipelines_section(c: Comparison) -> str | None:
    if not c.a.stages and not c.b.stages:
        return None
    pieces = ["<h2>Pipelines</h2>"]
    for name, side in (("A", c.a), ("B", c.b)):
        pieces.append(f"<h3>{name}: <code>{parts.escape(side.label)}</code></h3>")
        pieces.append(parts.stages_table(side.stages, f"stages-{name.lower()}") if side.stages
                      else '<p class="muted">stages unknown</p>')
    return "".join(pieces)


def machine_section(c: Comparison) -> str:
    out = f"<h2>Machine</h2>{parts.environment_facts(c.environment)}"
    if c.baseline_environment is not None:
        out += f"<h3>The saved run's machine</h3>{parts.environment_facts(c.baseline_environment, 'baseline-environment')}"
    return out


def render_comparison_html(c: Comparison) -> str:
    title = f"pipediag compare: {_WORDS.get(c.verdict.verdict, c.verdict.verdict)} — {c.a.label} vs {c.b.label}"
    return parts.page(title, [header_section(c), verdict_section(c), sides_section(c), rounds_section(c),
                        pipelines_section(c), parts.notes_list(list(c.environment.warnings) + list(c.notes)),
                        machine_section(c)])
