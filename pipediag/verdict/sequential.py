"""Sequential stopping: a mode stops once the readings that decide the verdict are clear of their lines.

A mode's own stop rule (records.run.StopRule) waits until its median and mean are pinned down, at
least `min_seconds` (2 s) each. That is what a mode needs on its own; the verdict needs less: it
compares the modes' rates and the fed step's wait with a few lines (verdict.thresholds). Once
synthetic mode has been measured, pipeline and input_only modes are compared with it as they run,
and each stops as soon as every line that decides the verdict is clear of the reading's interval,
after `decide_min_seconds` (0.5 s) and `decide_min_steps` (10; 12 for pipeline mode, whose wait
share over the window's second half needs three batch means of two steps); a reading near a line measures on to the
mode's own rule, as before (issue 26: measure longer only near a line).

The lines, as the verdict's rules use them (verdict.rules):
- pipeline mode: the fed step's slowdown, synthetic over pipeline rate, against GAP_SIGNIFICANT
  (`_starved`, the contention rule) and, where the step may have waited 5% or more, against 1
  (`clearly_above_one`: the wait's confidence and whether the wait cost throughput); the wait's
  share of step time against INPUT_WAIT_MODERATE and INPUT_WAIT_HIGH;
- input_only mode: the input alone over the free step against 1 (`clearly_below_one`, starved)
  and INPUT_HEADROOM (input outruns the step).

"Clear" is conservative twice over: the 95% interval (the ratio's from the far ends of the two
rates' intervals, as analysis.modes.ratio_of) must miss the line by LINE_MARGIN of it (the drift a
shared machine shows between windows of seconds), and the second half of the window on its own
must sit on the same side of every line (a prefetch buffer filled during warm-up, drained in the
first steps, makes a window's start faster than its steady state). A mode that stops so has
stop_reason "decided". The readings other rules compare (the contention rule's step ratio, the
hand-over edge) keep their own safety net: a reading within its spread of a line is measured
again, longer (api.gather.measure_edges_again).

The tuned run (the rewritten pipeline, feeding the step) stops the same way once its rate over the
rate it is judged against (the control, else pipeline mode) is clear of the lines the ablation
classifies a change by (1/MIN_GAIN, 1 and MIN_GAIN: harm, none, gain), and its rate over free input
clear of 1 (a tuned run faster than free input is drift, and its speedup is withheld). A tuned
rate near any of them measures on to the mode's own rule.
With two or more changes, the control that runs again after the changes alone stops the same
way once each change alone is clear of those lines against the two controls together
(ControlAgainDecided); the full-window control, where the short ones left a gain open, once it has
decided that gain (FullControlDecided).

A contention reading that straddled its line is measured again, synthetic then pipeline mode, back
to back and longer (api.gather.measure_edges_again). The new pipeline run stops as soon as the
contention rule (verdict.contention: both the fed step's slowdown and the step's own time beside
the pipeline over alone held to GAP_SIGNIFICANT) can no longer be on its edge: one of the two
readings settled below the line, or both above it, against the new synthetic run, "settled"
meaning its interval no longer straddles the line (the test that sent it to be measured again,
REMEASURE_MARGIN) and the second half of the window sits on the same side; otherwise it runs its
longer window to the end, as before. Pure Python on plain numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipediag import stats
from pipediag.analysis.ablation import MIN_GAIN, pooled
from pipediag.analysis.modes import ratio_of
from pipediag.verdict import thresholds as T
from pipediag.verdict.edges import ratio_interval

LINE_MARGIN = 0.10  # an interval must miss a line by 10% of it (ratios)
WAIT_MARGIN = 0.02  # ... and a wait share by 2 points of step time
# A contention reading measured again is off its edge once its interval no longer straddles the
# line: the test that sent it to be measured again (verdict.edges.Edge.straddles), with no margin.
# With LINE_MARGIN a reading of 1.07x or 1.11x (the two re-measures of 2026-12-03 19:25) could
# never stop before its window's end, although the verdict after that end reads the same point
# value against the same line, with no margin either.
REMEASURE_MARGIN = 0.0

DecidedFn = Callable[[Sequence[int], Sequence[int]], bool]  # (wait_ns, compute_ns) so far -> decided


@dataclass(frozen=True)
class RateReading:
    """Batches per second over a window, with its 95% interval (None where none can be formed)."""

    rate: float
    low: float | None
    high: float | None

    @property
    def interval(self) -> tuple[float, float] | None:
        return None if self.low is None or self.high is None else (self.low, self.high)


def rate_reading(step_ns: Sequence[int]) -> RateReading | None:
    """The rate and its interval from step times, as analysis.modes.summarize forms them."""
    n, total_ns = len(step_ns), sum(step_ns)
    if not n or total_ns <= 0:
        return None
    mean_ci = stats.batch_means_ci(step_ns)
    if mean_ci is None or mean_ci[0] <= 0:
        return RateReading(n * 1e9 / total_ns, None, None)
    return RateReading(n * 1e9 / total_ns, 1e9 / mean_ci[1], 1e9 / mean_ci[0])


def wait_share(wait_ns: Sequence[int], step_ns: Sequence[int], batches: int = 10) -> tuple[float, float, float] | None:
    """The share of step time spent waiting, with a batch-means 95% interval (value, low, high)."""
    n, total_ns = len(step_ns), sum(step_ns)
    k = min(batches, n // 2)
    if k < 3 or total_ns <= 0:
        return None
    size = n // k
    shares = []
    for i in range(k):
        part = sum(step_ns[i * size:(i + 1) * size])
        shares.append(sum(wait_ns[i * size:(i + 1) * size]) / part if part > 0 else 0.0)
    mean = sum(shares) / k
    half = stats.t_95(k - 1) * (sum((s - mean) ** 2 for s in shares) / (k - 1) / k) ** 0.5
    value = sum(wait_ns) / total_ns
    return value, value - half, value + half


def clear_of(low: float | None, high: float | None, line: float, margin: float = LINE_MARGIN) -> bool:
    """The interval misses `line` by `margin` of it on one side."""
    if low is None or high is None:
        return False
    return high < line / (1 + margin) or low > line * (1 + margin)


def same_side(value: float | None, reference: float | None, line: float) -> bool:
    return value is not None and reference is not None and (value >= line) == (reference >= line)


def settled(low: float | None, high: float | None, value: float, late_value: float | None, line: float,
            margin: float = LINE_MARGIN) -> bool:
    """The whole window's interval is clear of `line` and its second half sits on the same side."""
    return clear_of(low, high, line, margin) and same_side(late_value, value, line)


def _rate_over(step_ns: Sequence[int], against: RateReading):
    mode = rate_reading(step_ns)
    return None if mode is None else ratio_of(mode.rate, mode.interval, against.rate, against.interval)


class _AgainstFree:
    """A `decided(wait_ns, compute_ns)` condition that compares a mode's rate with synthetic mode's."""

    def __init__(self, synthetic: RateReading):
        self.synthetic = synthetic
        self.reason: str | None = None

    def _ratio(self, step_ns: Sequence[int], free_over_mode: bool):
        if not free_over_mode:
            return _rate_over(step_ns, self.synthetic)
        mode = rate_reading(step_ns)
        return None if mode is None else ratio_of(self.synthetic.rate, self.synthetic.interval, mode.rate, mode.interval)

    def gap(self, step_ns: Sequence[int]):
        """Synthetic mode's rate over this mode's (the fed step's slowdown), with its interval."""
        return self._ratio(step_ns, free_over_mode=True)


class PipelineDecided(_AgainstFree):
    """`decided(wait_ns, compute_ns)` for pipeline mode, against synthetic mode's rate."""

    def __call__(self, wait_ns: Sequence[int], compute_ns: Sequence[int]) -> bool:
        step_ns = [w + c for w, c in zip(wait_ns, compute_ns)]
        half = len(step_ns) // 2
        gap, late_gap = self.gap(step_ns), self.gap(step_ns[half:])
        wait, late_wait = wait_share(wait_ns, step_ns), wait_share(wait_ns[half:], step_ns[half:])
        if gap is None or wait is None or late_gap is None or late_wait is None:
            return False
        gap_lines = [T.GAP_SIGNIFICANT] + ([1.0] if wait[2] >= T.INPUT_WAIT_MODERATE else [])
        if not all(settled(gap.low, gap.high, gap.value, late_gap.value, line) for line in gap_lines):
            return False
        if not all(settled(wait[1], wait[2], wait[0], late_wait[0], line, WAIT_MARGIN / line)
                   for line in (T.INPUT_WAIT_MODERATE, T.INPUT_WAIT_HIGH)):
            return False
        self.reason = (f"synthetic over pipeline {gap.value:.2f}x (95%: {gap.low:.2f}-{gap.high:.2f}x), waiting "
                       f"{wait[0] * 100:.0f}% of the time: clear of the verdict's lines")
        return True


class InputOnlyDecided(_AgainstFree):
    """`decided(wait_ns, compute_ns)` for input_only mode (no step: each step's time is the wait)."""

    def headroom(self, step_ns: Sequence[int]):
        return self._ratio(step_ns, free_over_mode=False)

    def __call__(self, wait_ns: Sequence[int], compute_ns: Sequence[int]) -> bool:
        step_ns = [w + c for w, c in zip(wait_ns, compute_ns)]
        headroom, late = self.headroom(step_ns), self.headroom(step_ns[len(step_ns) // 2:])
        if headroom is None or late is None:
            return False
        if not all(settled(headroom.low, headroom.high, headroom.value, late.value, line)
                   for line in (1.0, T.INPUT_HEADROOM)):
            return False
        self.reason = (f"input alone {headroom.value:.2f}x the free step (95%: {headroom.low:.2f}-{headroom.high:.2f}x): "
                       "clear of the verdict's lines")
        return True


GAIN_LINES = (1 / MIN_GAIN, 1.0, MIN_GAIN)  # harm, none, gain (analysis.ablation.classify)


def clear_of_gain_lines(speedup, late_value: float) -> bool:
    """A speedup (analysis.modes.Ratio) settled on one side of every gain line, its window's
    second half (`late_value`) on the same side: the ablation's class for it is decided."""
    return all(settled(speedup.low, speedup.high, speedup.value, late_value, line) for line in GAIN_LINES)


class TunedDecided:
    """`decided(wait_ns, compute_ns)` for the tuned run, against `reference` (the control run's rate,
    else pipeline mode's) and, when known, `free` (synthetic mode's rate)."""

    def __init__(self, reference: RateReading, free: RateReading | None):
        self.reference, self.free = reference, free
        self.reason: str | None = None

    def __call__(self, wait_ns: Sequence[int], compute_ns: Sequence[int]) -> bool:
        step_ns = [w + c for w, c in zip(wait_ns, compute_ns)]
        late_ns = step_ns[len(step_ns) // 2:]
        checks = [(self.reference, GAIN_LINES)] + ([(self.free, (1.0,))] if self.free is not None else [])
        ratios = []
        for against, lines in checks:
            whole, late = _rate_over(step_ns, against), _rate_over(late_ns, against)
            if whole is None or late is None:
                return False
            if not all(settled(whole.low, whole.high, whole.value, late.value, line) for line in lines):
                return False
            ratios.append(whole)
        speedup = ratios[0]
        self.reason = (f"over its reference {speedup.value:.2f}x (95%: {speedup.low:.2f}-{speedup.high:.2f}x): "
                       "clear of the gain lines" + (f", {ratios[1].value:.2f}x free input" if len(ratios) > 1 else ""))
        return True


class FullControlDecided:
    """`decided(wait_ns, compute_ns)` for the control run again with the full window
    (analysis.ablation.needs_full_control): it stops once every run the short controls left
    undecided (`undecided`: their rates) is decided against it, or no longer for want of it: that
    run's rate over this control's clear of the gain lines (the window's second half on the same
    side), or this control's interval, relative to its rate, no wider than that run's own (from
    there the interval comes from the change's run, and a longer control would not decide it)."""

    def __init__(self, undecided: Sequence[RateReading]):
        self.undecided = list(undecided)
        self.reason: str | None = None

    def __call__(self, wait_ns: Sequence[int], compute_ns: Sequence[int]) -> bool:
        step_ns = [w + c for w, c in zip(wait_ns, compute_ns)]
        control, late = rate_reading(step_ns), rate_reading(step_ns[len(step_ns) // 2:])
        if not self.undecided or control is None or control.interval is None or late is None:
            return False
        width = (control.high - control.low) / control.rate
        for run in self.undecided:
            if run.interval is None:
                return False
            if width <= (run.high - run.low) / run.rate:
                continue
            ratio = ratio_of(run.rate, run.interval, control.rate, control.interval)
            if not clear_of_gain_lines(ratio, run.rate / late.rate):
                return False
        self.reason = (f"the control's interval {control.low:.1f}-{control.high:.1f} batches/s: every gain it was "
                       "run for is decided, or as narrow as its own run")
        return True


class ControlAgainDecided:
    """`decided(wait_ns, compute_ns)` for the control run again after the changes alone (two or
    more changes, tuner.ablation): it stops once every change's alone run is decided against the
    two controls together, as analysis.ablation.pooled takes them (their mean rate, an
    interval spanning both): that run's rate over theirs clear of the gain lines (1/MIN_GAIN, 1,
    MIN_GAIN), as the tuned run's test, with the controls' rate from this run's second half on the
    same side. An alone run near a line, or without an interval, keeps the control to its own stop
    rule (its short window), as before; so does a first control without an interval. Only a clear
    gain or a clear harm can be decided so (a run clear of all three lines is one of the two), and
    the drift test between the controls (analysis.ablation.unsettled) reads only changes of no gain."""

    def __init__(self, first: RateReading, alone: Sequence[RateReading]):
        self.first, self.alone = first, list(alone)
        self.reason: str | None = None

    def __call__(self, wait_ns: Sequence[int], compute_ns: Sequence[int]) -> bool:
        step_ns = [w + c for w, c in zip(wait_ns, compute_ns)]
        again, late = rate_reading(step_ns), rate_reading(step_ns[len(step_ns) // 2:])
        first = self.first
        if not self.alone or first.interval is None or again is None or again.interval is None or late is None:
            return False
        rate, interval = pooled([(first.rate, first.interval), (again.rate, again.interval)])
        both = RateReading(rate, *interval)
        both_late = (first.rate + late.rate) / 2
        ratios = []
        for run in self.alone:
            if run.interval is None:
                return False
            ratio = ratio_of(run.rate, run.interval, both.rate, both.interval)
            if ratio is None or not both_late or not clear_of_gain_lines(ratio, run.rate / both_late):
                return False
            ratios.append(ratio)
        self.reason = ("every change alone clear of the gain lines against the two controls ("
                       + ", ".join(f"{r.value:.2f}x" for r in ratios) + ")")
        return True


class ContentionDecided(_AgainstFree):
    """`decided(wait_ns, compute_ns)` for pipeline mode measured again after a contention reading
    straddled its line: against the new synthetic run's rate (`free`) and its step's own times
    (`free_compute_ns`), the contention rule is off its edge with the readings' intervals no
    longer straddling the line (`margin`: REMEASURE_MARGIN), the second half of the window on the
    same side."""

    def __init__(self, free: RateReading, free_compute_ns: Sequence[int], margin: float = REMEASURE_MARGIN):
        super().__init__(free)
        self.margin = margin
        self.free_compute = stats.median(free_compute_ns) if free_compute_ns else None
        self.free_compute_ci = stats.median_ci(free_compute_ns)

    def step(self, compute_ns: Sequence[int]):
        if not compute_ns or not self.free_compute:
            return None
        return ratio_interval(stats.median(compute_ns), stats.median_ci(compute_ns), self.free_compute,
                              self.free_compute_ci)

    def __call__(self, wait_ns: Sequence[int], compute_ns: Sequence[int]) -> bool:
        step_ns = [w + c for w, c in zip(wait_ns, compute_ns)]
        half = len(step_ns) // 2
        gap, late_gap = self.gap(step_ns), self.gap(step_ns[half:])
        step, late_step = self.step(compute_ns), self.step(compute_ns[half:])
        if gap is None or late_gap is None or step is None or late_step is None:
            return False
        line = T.GAP_SIGNIFICANT
        readings = {"the fed step's slowdown": (gap.value, gap.low, gap.high, late_gap.value),
                    "the step's own time beside the pipeline over alone": step[:3] + (late_step[0],)}
        sides = {}
        for what, (value, low, high, late) in readings.items():
            if settled(low, high, value, late, line, self.margin):
                sides[what] = value >= line
        below = [what for what, above in sides.items() if not above]
        if below:
            what = below[0]
            self.reason = f"{what} {readings[what][0]:.2f}x settled below the {line:.2f}x line: not contention"
            return True
        if len(sides) == len(readings):
            self.reason = (f"the fed step's slowdown {gap.value:.2f}x and the step's own time {step[0]:.2f}x both "
                           f"settled above the {line:.2f}x line")
            return True
        return False
