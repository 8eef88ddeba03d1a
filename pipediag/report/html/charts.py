"""Charts for the HTML report: matplotlib figures rendered to inline SVG strings.

Figures are built with `matplotlib.figure.Figure` directly, never through pyplot, so no GUI
backend is selected, no display is needed and the user's own pyplot state is left alone (the
way matplotlib documents for web servers). Text is drawn as paths, so the SVG needs no fonts
and carries no user string as markup. Each chart takes plain numbers; a missing value (None)
is left out of the drawing, never drawn as 0.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

MODE_COLORS = {"synthetic": "#4c72b0", "pipeline": "#dd8452", "input_only": "#55a868", "tuned": "#8172b3"}
CPU_COLOR, PROCESS_COLOR = "#4c72b0", "#8da0cb"
STAGE_COLOR, SLOW_COLOR = "#4c72b0", "#c44e52"  # the anatomy's bars; the slow stage stands out in red
GPU_COLORS = ("#c44e52", "#e377c2", "#8c564b", "#bcbd22", "#17becf", "#7f7f7f", "#937860", "#da8bc3")
_WIDTH_IN = 8.0


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    low: float | None = None  # 95% interval, when known
    high: float | None = None
    color: str = "#4c72b0"


@dataclass(frozen=True)
class Series:
    label: str
    times_s: tuple[float, ...]
    values: tuple[float | None, ...]  # None: not measured at that time (a gap in the line)
    color: str
    width: float = 1.6


@dataclass(frozen=True)
class Panel:
    title: str
    series: tuple[Series, ...]


def _figure(height_in: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(_WIDTH_IN, height_in), layout="constrained")


def to_svg(figure, name: str) -> str:
    """The figure as an `<svg>` element to inline in HTML. `name` salts the ids matplotlib
    generates (clip paths, glyphs), so two charts in one page never share an id by accident."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": f"pipediag-{name}"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    start = text.find("<svg")
    svg = text[start:]
    # A fixed pixel size would overflow narrow windows; the viewBox keeps the proportions.
    return re.sub(r'(<svg[^>]*?) width="[^"]*" height="[^"]*"', r'\1 width="100%"', svg, count=1)


def bar_chart(bars: Sequence[Bar], xlabel: str, name: str) -> str | None:
    """Horizontal bars with 95% error bars, first bar on top. None when there is nothing to draw."""
    bars = [b for b in bars if b.value is not None and math.isfinite(b.value)]
    if not bars:
        return None
    fig = _figure(0.55 * len(bars) + 0.9)
    ax = fig.add_subplot()
    ys = list(range(len(bars)))[::-1]
    ax.barh(ys, [b.value for b in bars], color=[b.color for b in bars], height=0.6)
    for y, b in zip(ys, bars):
        if b.low is not None and b.high is not None:
            ax.errorbar(b.value, y, xerr=[[b.value - b.low], [b.high - b.value]], fmt="none", ecolor="#222222",
                        capsize=4, linewidth=1.2)
        top = b.high if b.high is not None else b.value
        ax.annotate(f"{b.value:,.1f}", (top, y), xytext=(6, 0), textcoords="offset points", va="center", fontsize=9)
    ax.set_yticks(ys, [b.label for b in bars])
    ax.set_xlabel(xlabel)
    ax.set_xlim(0, max((b.high if b.high is not None else b.value) for b in bars) * 1.18 or 1.0)
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="x", alpha=0.3)
    return to_svg(fig, name)


def timeline_chart(panels: Sequence[Panel], ylabel: str, name: str, ylim: tuple[float, float] = (0, 105)) -> str | None:
    """One small panel per mode, sharing the y axis; lines break where a value is None."""
    panels = [p for p in panels if any(s.times_s for s in p.series)]
    if not panels:
        return None
    fig = _figure(1.7 * len(panels) + 0.6)
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, panel in zip(axes, panels):
        for s in panel.series:
            values = [math.nan if v is None else v for v in s.values]
            ax.plot(s.times_s, values, label=s.label, color=s.color, linewidth=s.width)
        ax.set_title(panel.title, loc="left", fontsize=10)
        ax.set_ylim(*ylim)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    axes[-1].set_xlabel("seconds since the mode's timed window began")
    return to_svg(fig, name)


@dataclass(frozen=True)
class Line:
    """Points joined by a line; a None value is a gap, never 0. `lows`/`highs`: 95% error bars
    where both are known."""

    label: str
    xs: tuple[float, ...]
    ys: tuple[float | None, ...]
    color: str
    lows: tuple[float | None, ...] | None = None
    highs: tuple[float | None, ...] | None = None
    marker: str = "o"
    style: str = "-"
    right: bool = False  # drawn against the second (right-hand) y axis


@dataclass(frozen=True)
class Level:
    """A horizontal reference line, with an optional shaded band (an interval)."""

    label: str
    value: float
    color: str
    low: float | None = None
    high: float | None = None
    style: str = "--"


@dataclass(frozen=True)
class Mark:
    """A vertical line at x, labelled (the knee, an out-of-memory batch size)."""

    label: str
    x: float
    color: str
    style: str = ":"


def peak_memory_line(xs: tuple[float, ...], peaks: Sequence) -> Line:
    """Peak device memory per batch size in GiB, on the right axis; a size without a reading is a gap."""
    return Line("peak memory, GiB (right axis)", xs, tuple(None if p is None else p.bytes / 2**30 for p in peaks),
                "#c44e52", marker="^", style="-.", right=True)


def oom_marks(batch_sizes: Sequence[int]) -> list[Mark]:
    """A dashed red line at each batch size that ran out of memory."""
    return [Mark(f"out of memory at {b}", float(b), "#c53030", style="--") for b in batch_sizes]


def _known(line: Line) -> list[int]:
    return [i for i, y in enumerate(line.ys) if y is not None and math.isfinite(y)]


def xy_chart(lines: Sequence[Line], xlabel: str, ylabel: str, name: str, *, right_label: str | None = None,
             levels: Sequence[Level] = (), marks: Sequence[Mark] = (), log2_x: bool = False,
             xticks: Sequence[float] | None = None, from_zero: bool = True, height_in: float = 3.6) -> str | None:
    """Lines over x with error bars, reference levels and vertical marks. None when no line has a
    single known value (nothing measured, nothing drawn). `from_zero`: the y axes start at 0 (rates);
    off for ratios, which sit around 1."""
    drawn = [line for line in lines if _known(line)]
    if not drawn:
        return None
    fig = _figure(height_in)
    ax = fig.add_subplot()
    twin = None
    if any(line.right for line in drawn):
        twin = ax.twinx()
        twin.set_ylabel(right_label or "")
    handles = []
    for line in drawn:
        target = twin if line.right and twin is not None else ax
        ys = [math.nan if y is None else y for y in line.ys]
        (handle,) = target.plot(line.xs, ys, label=line.label, color=line.color, marker=line.marker,
                                linestyle=line.style, linewidth=1.6, markersize=5)
        handles.append(handle)
        if line.lows is not None and line.highs is not None:
            bars = [i for i in _known(line) if line.lows[i] is not None and line.highs[i] is not None]
            if bars:
                target.errorbar([line.xs[i] for i in bars], [line.ys[i] for i in bars],
                                yerr=[[line.ys[i] - line.lows[i] for i in bars], [line.highs[i] - line.ys[i] for i in bars]],
                                fmt="none", ecolor=line.color, capsize=3, linewidth=1.0)
    for level in levels:
        if level.low is not None and level.high is not None:
            ax.axhspan(level.low, level.high, color=level.color, alpha=0.15, linewidth=0)
        handles.append(ax.axhline(level.value, color=level.color, linestyle=level.style, linewidth=1.2,
                                  label=level.label))
    for mark in marks:
        handles.append(ax.axvline(mark.x, color=mark.color, linestyle=mark.style, linewidth=1.4, label=mark.label))
    if log2_x:
        ax.set_xscale("log", base=2)
    if xticks:
        from matplotlib.ticker import NullLocator

        ax.set_xticks(list(xticks), [f"{x:g}" for x in xticks])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if from_zero:
        ax.set_ylim(bottom=0)
        if twin is not None:
            twin.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.spines[["top"]].set_visible(False)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.08 if twin is not None else 1.0, 1.0), fontsize=8,
              frameon=False)
    return to_svg(fig, name)
