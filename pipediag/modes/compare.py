"""Interleaved rounds for `compare`: A and B take turns feeding the same step, AB then BA, …

Pure Python like `runner`: each side is a `next_batch()` callable, the step a callable, the clock
injected. Every segment (one side, one kind, one turn) is a `run_mode` call, so warm-up, timing,
out-of-memory and Ctrl-C behave exactly as in `diagnose`.

Switching sides must not leak one side's work into the other's turn. A tf.data iterator left
alive keeps producing into its buffers while the other side runs: it stocks batches that its next
turn gets for free, and it takes CPU from the side being timed (on the 2-core development machine
this made a pipeline that was no faster look 1.4x faster). So every turn ends with the side's
`end_turn()`, which drops its iterator; the next turn starts a fresh one and warms it up before
timing. See docs/compare.md ("Switching sides").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipediag import stats
from pipediag.analysis.compare import LookPlan, RatioInterval, Sequential, paired_ratio, round_order, unpaired_ratio
from pipediag.errors import UserCodeError
from pipediag.modes.runner import run_mode
from pipediag.records.compare import Round, Segment
from pipediag.records.kinds import FAILED, INPUT_EXHAUSTED, INTERRUPTED, OUT_OF_MEMORY, STALLED, RoundsStop
from pipediag.records.run import ModeRun, StopRule

FED, INPUT_ONLY = "fed", "input_only"
KINDS = (FED, INPUT_ONLY)

# A turn is made at least this many times as long as what starting a fresh iterator costs beyond
# its warm-up batches' usual time (shuffle buffers filling, files opening), so that starting one
# every turn costs at most a fifth of the time. (The warm-up batches themselves are kept to a third
# of a turn or less by `ComparePlan.segment_steps`.)
TURN_OVER_STARTUP = 4.0


@dataclass(frozen=True)
class ComparePlan:
    """How long and how finely `compare` measures. The statistics' part is `looks`."""

    looks: LookPlan = field(default_factory=LookPlan)
    max_seconds: float = 60.0  # the whole measurement: probes and rounds
    segment_seconds: float = 0.5  # one side's turn, at least; longer for slow steps
    segment_steps: int = 10  # a turn lasts at least this many (probe) step times: 2x the warm-up
    warmup_steps: int = 5  # each side's first turn (the probe): compile, buffers, autotune
    probe_seconds: float = 1.0
    segment_warmup_steps: int = 5  # a fresh iterator's first batches: startup, buffers filling
    max_segment_steps: int = 100_000
    kinds: tuple[str, ...] = KINDS

    def __post_init__(self) -> None:
        if self.max_seconds <= 0 or self.segment_seconds <= 0 or self.probe_seconds <= 0:
            raise ValueError("ComparePlan needs positive max_seconds, segment_seconds and probe_seconds")
        if not self.kinds or any(k not in KINDS for k in self.kinds):
            raise ValueError(f"kinds must be taken from {KINDS}")


@dataclass
class Side:
    name: str  # "A" or "B"
    next_batch: Callable[[], Any]
    end_turn: Callable[[], None] | None = None  # after every turn: stop the pipeline's background work
    warmup_until: Callable[[], bool] | None = None  # extends the first warm-up, e.g. until a cache is full
    rate_scale: float = 1.0  # batches/s -> the comparison's unit (its batch size when batch sizes differ)


@dataclass(frozen=True)
class Rounds:
    """What the interleaved run measured and how it ended."""

    segments: tuple[Segment, ...]
    rounds: tuple[Round, ...]
    stop_reason: RoundsStop
    intervals: dict[str, RatioInterval | None]  # kind -> B/A
    primary: str  # the kind that decides when to stop: fed, unless only input_only was run
    looks_taken: int
    segment_seconds: float
    baseline_chunks: dict[str, tuple[float, ...]]  # kind -> the saved run's chunk rates
    notes: tuple[str, ...] = ()
    failed_side: str | None = None  # out_of_memory, input_exhausted, stalled, failed: whose turn it was
    # stop_reason "failed": the user's code raised (or exited) in `failed_side`'s turn; the
    # rounds before it are kept, and the caller shows the error after them.
    error: UserCodeError | None = field(default=None, compare=False, repr=False)


class RoundProgress(Protocol):
    def phase(self, text: str) -> None: ...

    def round(self, done: int, elapsed_s: float, cap_s: float, interval: RatioInterval | None) -> None: ...


def chunk_rates(step_ns: Sequence[int], chunk_seconds: float, min_chunks: int = 5, max_chunks: int = 30) -> tuple[float, ...]:
    """A saved run cut into contiguous chunks of about `chunk_seconds`: one rate per chunk, so
    that its values average over as much time as a live turn does."""
    n = len(step_ns)
    total_s = sum(step_ns) / 1e9
    if n < 2 or total_s <= 0:
        return ()
    k = max(min_chunks, min(max_chunks, round(total_s / chunk_seconds)))
    k = max(2, min(k, n // 2))
    bounds = [round(i * n / k) for i in range(k + 1)]
    out = []
    for lo, hi in zip(bounds, bounds[1:]):
        chunk = step_ns[lo:hi]
        if chunk and sum(chunk) > 0:
            out.append(len(chunk) / (sum(chunk) / 1e9))
    return tuple(out)


def run_rounds(
    a: Side | None,
    b: Side,
    step: Callable[[Any], Any] | None,
    plan: ComparePlan,
    *,
    clear: Callable[[RatioInterval], bool],
    clock_ns: Callable[[], int],
    baseline: dict[str, ModeRun] | None = None,
    baseline_scale: float = 1.0,
    progress: RoundProgress | None = None,
    dispatch: Callable[[Any], Callable[[], Any]] | None = None,
    watchdog: Any = None,
) -> Rounds:
    """Probe each side once, then run rounds until the answer is clear or a cap is reached.

    `a` is None when comparing against a saved run: `baseline` then holds its runs per kind.
    `dispatch` (a JAX or PyTorch step): fed turns keep one step in flight while fetching, as
    diagnose does (modes.stepping.Overlapped); without a synthetic run each fetch counts whole as wait.
    `watchdog` (modes.watchdog.Watchdog): every turn's batches and steps run under its deadline;
    a turn that stalls ends the rounds (stop_reason "stalled", `failed_side` names whose turn).
    """
    _check_inputs(a, step, plan, baseline, dispatch)
    kinds = plan.kinds
    primary = kinds[0]
    sides = {"B": b} if a is None else {"A": a, "B": b}
    start = clock_ns()
    turns = _Turns(sides, step, dispatch, watchdog, clock_ns, progress)
    notes: list[str] = []
    # Probes: each side's first turn, with the compile step and a longer warm-up; they size the
    # turns and never enter the statistics.
    stop_reason, failed = _probe(turns, plan)
    segment_s, excess = _turn_seconds(plan, turns.segments, len(sides))
    chunks: dict[str, tuple[float, ...]] = {}
    if baseline is not None:
        chunks = {k: tuple(r * baseline_scale for r in chunk_rates(baseline[k].step_ns, segment_s)) for k in kinds}
    sequential = Sequential(plan.looks, clear, baseline=chunks.get(primary))
    rates: dict[str, dict[str, list[float]]] = {k: {n: [] for n in sides} for k in kinds}
    rounds: list[Round] = []
    error = None
    if stop_reason is None:
        try:
            stop_reason, failed = _rounds_until_clear(turns, plan, segment_s, sequential, rounds, rates, start,
                                                      against_saved=a is None)
        except _TurnFailed as failure:  # the probes passed: the rounds before this turn are kept
            stop_reason, failed, error = FAILED, failure.side, failure.error
    intervals = _intervals(plan, sequential, rates, chunks, against_saved=baseline is not None)
    if excess > 0.1:
        notes.append(f"starting a fresh iterator cost up to {excess:.2f} s beyond its first batches (shuffle buffers, "
                     f"files opening?); every turn starts one, so turns were made {segment_s:.2f} s long "
                     "(docs/compare.md, \"Switching sides\")")
    return Rounds(
        segments=tuple(turns.segments), rounds=tuple(rounds), stop_reason=stop_reason, intervals=intervals,
        primary=primary, looks_taken=sequential.looks_taken, segment_seconds=segment_s, baseline_chunks=chunks,
        notes=tuple(notes),
        failed_side=failed if stop_reason in (OUT_OF_MEMORY, INPUT_EXHAUSTED, STALLED, FAILED) else None, error=error,
    )


def _check_inputs(a: Side | None, step: Callable[[Any], Any] | None, plan: ComparePlan,
                  baseline: dict[str, ModeRun] | None, dispatch: Callable[[Any], Callable[[], Any]] | None) -> None:
    """ValueError unless exactly one of side A and a saved baseline is given, with what each kind needs."""
    if (a is None) == (baseline is None):
        raise ValueError("give side A or a saved baseline, not both")
    if FED in plan.kinds and step is None and dispatch is None:
        raise ValueError("the fed kind needs a step")
    if baseline is not None:
        missing = [k for k in plan.kinds if baseline.get(k) is None or baseline[k].steps < 4]
        if missing:
            raise ValueError(f"the saved run has no usable {', '.join(missing)} timings")


class _TurnFailed(Exception):
    """The user's code raised in a turn of the rounds (not a probe's): whose turn, and the error."""

    def __init__(self, side: str, error: UserCodeError):
        super().__init__(error.message)
        self.side, self.error = side, error


class _Turns:
    """Runs one side's turn as a `run_mode` call, ends the side's turn, and keeps every segment."""

    def __init__(self, sides: dict[str, Side], step: Callable[[Any], Any] | None,
                 dispatch: Callable[[Any], Callable[[], Any]] | None, watchdog: Any,
                 clock_ns: Callable[[], int], progress: RoundProgress | None) -> None:
        self.sides, self.step, self.dispatch, self.watchdog = sides, step, dispatch, watchdog
        self.clock_ns, self.progress = clock_ns, progress
        self.segments: list[Segment] = []

    def run(self, name: str, kind: str, index: int, rule: StopRule, **kw) -> Segment:
        if self.progress is not None and index < 0:
            self.progress.phase(f"warming up {name} ({'fed step' if kind == FED else 'input only'})")
        side = self.sides[name]
        try:
            fed = kind == FED
            run = run_mode(f"{name}:{kind}", side.next_batch, self.step if fed and self.dispatch is None else None,
                           rule, clock_ns=self.clock_ns, dispatch=self.dispatch if fed else None,
                           watchdog=self.watchdog, **kw)
        except UserCodeError as error:  # say whose turn it was: A's and B's code may differ
            raise UserCodeError(f"{error.where} (in {name}'s turn)", error.error, error.hint) from error.error
        finally:
            if side.end_turn is not None:
                side.end_turn()
        segment = Segment(name, kind, index, run)
        self.segments.append(segment)
        return segment


def _ended(segment: Segment) -> str | None:
    """The stop reason that ends the rounds (interrupted, out of memory, input exhausted, stalled), or None."""
    if segment.run.stop_reason in (INTERRUPTED, OUT_OF_MEMORY, INPUT_EXHAUSTED, STALLED):
        return segment.run.stop_reason
    return None


def _probe(turns: _Turns, plan: ComparePlan) -> tuple[str | None, str | None]:
    """Each side's first turn of each kind; the stop reason and whose turn it was if one ended the run."""
    first_fed: set[str] = set()
    for kind in plan.kinds:
        for name in turns.sides:
            seconds = plan.probe_seconds if kind == FED else plan.probe_seconds / 2
            rule = StopRule(max_seconds=seconds, min_seconds=seconds, min_steps=1, max_steps=plan.max_segment_steps,
                            warmup_steps=plan.warmup_steps, warmup_max_seconds=max(30.0, plan.max_seconds / 2))
            until = turns.sides[name].warmup_until if name not in first_fed else None
            segment = turns.run(name, kind, -1, rule, warmup_until=until,
                                first_step_is_compile=kind == FED and name not in first_fed)
            first_fed.add(name)
            stop_reason = _ended(segment)
            if stop_reason:
                return stop_reason, name
    return None, None


def _turn_seconds(plan: ComparePlan, probes: list[Segment], n_sides: int) -> tuple[float, float]:
    """How long a turn lasts, from the probes' step times and what starting a fresh iterator cost beyond its
    warm-up batches' usual time (that excess is returned too)."""
    segment_s = plan.segment_seconds
    probe_steps = [stats.median(s.run.step_ns) / 1e9 for s in probes if s.run.steps]
    if probe_steps:
        segment_s = max(segment_s, plan.segment_steps * max(probe_steps))
    # A fresh iterator's warm-up, as the input-only probes saw it (no compile, no cache fill there),
    # and what it cost beyond its batches' usual time (shuffle buffers filling, files opening).
    warmups = [s for s in probes if s.kind == INPUT_ONLY and s.run.steps]
    excess = max((s.run.warmup_ns / 1e9 - s.run.warmup_steps * stats.median(s.run.step_ns) / 1e9 for s in warmups),
                 default=0.0)
    segment_s = max(segment_s, TURN_OVER_STARTUP * excess)
    turns_per_round = len(plan.kinds) * n_sides
    segment_s = min(segment_s, max(plan.segment_seconds, plan.max_seconds / (turns_per_round * (plan.looks.first_look + 1))))
    return segment_s, excess


def _rounds_until_clear(turns: _Turns, plan: ComparePlan, segment_s: float, sequential: Sequential,
                        rounds: list[Round], rates: dict[str, dict[str, list[float]]], start: int, *,
                        against_saved: bool) -> tuple[str, str | None]:
    """Rounds (AB, BA, ...; B alone against a saved run) until the sequential test stops or the time cap
    would be passed; each complete round is appended to `rounds` and its rates to `rates`. Returns the stop
    reason and whose turn it was if a turn ended the run."""
    kinds, primary = plan.kinds, plan.kinds[0]
    turns_per_round = len(kinds) * len(turns.sides)
    index = 0
    while True:
        projected = rounds[-1].seconds if len(rounds) == 1 else (
            sum(r.seconds for r in rounds) / len(rounds) if rounds else segment_s * turns_per_round * 1.2)
        if (turns.clock_ns() - start) / 1e9 + projected > plan.max_seconds:
            return "time_cap", None
        began = turns.clock_ns()
        order = round_order(index) if not against_saved else ("B",)
        measured: dict[str, dict[str, float]] = {k: {} for k in kinds}
        for kind in kinds:
            for name in order:
                rule = StopRule(max_seconds=segment_s, min_seconds=segment_s, min_steps=1,
                                max_steps=plan.max_segment_steps, warmup_steps=plan.segment_warmup_steps,
                                warmup_max_seconds=plan.max_seconds)
                try:
                    segment = turns.run(name, kind, index, rule)
                except UserCodeError as error:  # a round cut short is left out, as below
                    raise _TurnFailed(name, error) from error
                stop_reason = _ended(segment)
                if stop_reason:
                    return stop_reason, name  # a round cut short is left out of the statistics
                measured[kind][name] = segment.batches_per_sec * turns.sides[name].rate_scale
        seconds = (turns.clock_ns() - began) / 1e9
        rounds.append(Round(index, "".join(order), measured, seconds))
        for kind in kinds:
            for name in turns.sides:
                rates[kind][name].append(measured[kind][name])
        stop_reason = sequential.add(measured[primary].get("A"), measured[primary]["B"])
        if turns.progress is not None:
            turns.progress.round(len(rounds), (turns.clock_ns() - start) / 1e9, plan.max_seconds, sequential.last)
        if stop_reason is not None:
            return stop_reason, None
        index += 1


def _intervals(plan: ComparePlan, sequential: Sequential, rates: dict[str, dict[str, list[float]]],
               chunks: dict[str, tuple[float, ...]], *, against_saved: bool) -> dict[str, RatioInterval | None]:
    """B/A per kind: the primary kind's from the sequential test, the others' paired (or unpaired against a
    saved run's chunks)."""
    kinds = plan.kinds
    intervals: dict[str, RatioInterval | None] = {kinds[0]: sequential.conclude()}
    level, confidence = plan.looks.level, plan.looks.confidence
    for kind in kinds[1:]:
        if against_saved:
            intervals[kind] = unpaired_ratio(chunks[kind], rates[kind]["B"], level, confidence)
        else:
            intervals[kind] = paired_ratio(rates[kind]["A"], rates[kind]["B"], level, confidence)
    return intervals
