"""Runs one mode: warm-up apart, then timed steps until the estimate is stable or a cap is hit.

Pure Python: it takes a `next_batch()` callable (the input side) and an optional `step(batch)`
callable (which must return only once the work is really done), and an injected clock. Each
timed step records two numbers: nanoseconds spent waiting for the batch, and nanoseconds in the
step. The callables are built elsewhere (modes/feeds.py, steps/).

A step that can be *dispatched* (`dispatch(batch)` returns at once, with a `finish()` that waits
for the device work, as a JAX or PyTorch step does) runs the way a real training loop runs it:
one step in flight while the next batch is fetched (lag 1: fetch batch i, wait for step i-1,
dispatch step i). Then the time spent fetching is not all time the device waited: a fetch that
ends while the previous step is still running was hidden behind it. `Overlapped` says how much
of each fetch was exposed; that exposed part is the step's wait.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pipediag import stats
from pipediag.modes.stepping import Clocked, OutOfMemory, Overlapped, guarded
from pipediag.modes.watchdog import Watchdog
from pipediag.records.kinds import DECIDED, INTERRUPTED, OUT_OF_MEMORY, STALLED
from pipediag.records.run import ErrorInfo, ModeRun, StopRule
from pipediag.records.stall import Stalled

ProgressFn = Callable[[str, float, float, int], None]  # mode, elapsed_s, cap_s, steps


EDGE_WINDOW_FACTOR = 2.0  # how much longer a mode runs again when a reading sat on a threshold


def longer(rule: StopRule, factor: float = EDGE_WINDOW_FACTOR) -> StopRule:
    """The rule for measuring a mode again because a verdict reading sat within its spread of a
    threshold: a window `factor` times the cap, run to its end (the interval that let the first
    run stop early was tight enough for the mode, not for the decision). Bounded: once, 2x."""
    seconds = rule.usual_seconds * factor
    steps = int(rule.min_steps * factor)  # a decision too waits for them: never fewer steps than the first run's
    return replace(rule, max_seconds=seconds, min_seconds=seconds, min_steps=steps, decide_min_steps=steps,
                   soft_max_seconds=None)






# More batch shapes new to a mode than this within its timed steps are not a finite epoch's
# boundary (a short last batch, a few length buckets) but shapes that keep changing (padding to
# each batch's longest element): then every new shape's retrace is part of the steady state, and
# those steps stay in the timings. So do they when they are most of the timed steps (a short run
# of ever-new shapes): a finite epoch repeats its shapes, so its new ones are a minority.
MAX_NEW_SHAPE_STEPS = 8


def run_mode(
    name: str,
    next_batch: Callable[[], Any],
    step: Callable[[Any], Any] | None,
    rule: StopRule,
    *,
    clock_ns: Callable[[], int],
    progress: ProgressFn | None = None,
    warmup_until: Callable[[], bool] | None = None,
    first_step_is_compile: bool = False,
    dispatch: Callable[[Any], Callable[[], Any]] | None = None,
    hideable_ns: int | None = None,
    watchdog: Watchdog | None = None,
    decided: Callable[[list[int], list[int]], bool] | None = None,
    paused_ns: Callable[[], int] | None = None,
    keep_warmup: Callable[[], int | None] | None = None,
) -> ModeRun:
    """Time one mode. `warmup_until`, if given, extends the warm-up until it returns True
    (bounded by `rule.warmup_max_seconds`), e.g. until a cache has been filled once.
    `dispatch`, instead of `step`: run the step with one in flight while the next batch is
    fetched (see `Overlapped`); `hideable_ns` is the synthetic mode's median wait for a step.
    `watchdog`: every step (fetch and step together, timed inside) runs under its deadline; one
    that misses it ends the mode with stop_reason "stalled", its steps so far kept, and an error
    saying whether it was waiting for a batch or inside the step.
    With a step, the first timed step of each batch shape this mode had not seen (first step and
    warm-up included) is kept out of the timings and listed in `new_shape_steps_ns`: tf.function,
    Keras and jax.jit trace once per new input shape, as they do on the first step, so that step
    is a compile, not the steady state (a finite dataset without drop_remainder ends each epoch
    with a short batch). More than MAX_NEW_SHAPE_STEPS of them: they are the steady state and go
    back into the timings, with a note.
    `decided(wait_ns, compute_ns)`, if given, is asked at the same checkpoints as the stable rule,
    from `rule.decide_min_seconds` and `rule.decide_min_steps` on: True ends the mode with stop_reason "decided"
    (verdict.sequential: the readings that decide the verdict are clear of their lines).
    `paused_ns` (Step.paused_ns), with `step`: the time the step's caller spent outside any step
    (a script's validation between two window steps) is kept out of each step's time and of the
    elapsed time the caps count, and the mode's notes say how much there was.
    `keep_warmup`, if given, is asked once the warm-up has ended: a clock time makes the warm-up's
    steps past the fixed ones (those `warmup_until` held it for) that began at or after it the
    first timed steps, the window starting where the first of them began
    (modes.warmup.Settled.settled_since_ns: from there on the step no longer rose); None keeps none.
    Not when the step's caller paused during the warm-up's late steps."""
    if dispatch is not None and step is not None:
        raise ValueError("give step or dispatch, not both")
    overlapped = Overlapped(clock_ns, next_batch, dispatch, hideable_ns) if dispatch is not None else None
    paused_ns = paused_ns if step is not None and dispatch is None else None
    clocked = overlapped or Clocked(clock_ns, next_batch, step, paused_ns=paused_ns)
    timer = _ModeTimer(name, clocked, overlapped, guarded(clocked, watchdog, name), rule, clock_ns, progress,
                       hideable_ns, track_shapes=step is not None or dispatch is not None, decided=decided,
                       paused_ns=paused_ns)
    try:
        timer.warm_up(first_step_is_compile, warmup_until)
        since_ns = keep_warmup() if keep_warmup is not None else None
        if since_ns is not None:
            timer.time_from_late_warmup(since_ns)
        return timer.time()  # ends time_cap, max_steps or stable
    except OutOfMemory as oom:
        return timer.finish(OUT_OF_MEMORY, oom.error)
    except StopIteration:
        return timer.finish("input_exhausted")
    except KeyboardInterrupt:
        timer.keep_late_warmup()
        return timer.finish(INTERRUPTED)
    except Stalled as stall:
        return timer.finish("stalled", stall)


class _ModeTimer:
    """One mode's warm-up, timed steps and ending (run_mode): the per-step timings kept so far, the
    steps of new batch shapes kept out of them, and the notes."""

    def __init__(self, name: str, clocked: Clocked, overlapped: Overlapped | None,
                 guarded: Callable[[Callable[[], Any]], Any], rule: StopRule, clock_ns: Callable[[], int],
                 progress: ProgressFn | None, hideable_ns: int | None, *, track_shapes: bool,
                 decided: Callable[[list[int], list[int]], bool] | None = None,
                 paused_ns: Callable[[], int] | None = None) -> None:
        self.name, self.clocked, self.overlapped, self.guarded = name, clocked, overlapped, guarded
        self.rule, self.clock_ns, self.progress, self.hideable_ns = rule, clock_ns, progress, hideable_ns
        self.track_shapes, self.decided = track_shapes, decided
        self.paused_ns = paused_ns or (lambda: 0)
        self.paused_at_window_start = self.paused_ns()
        self.notes: list[str] = []
        self.first_step_ns: int | None = None
        self.warmup_steps = 0
        self.late_warmup: list[tuple[int, int, int, int]] = []  # (wait, compute, fetch, block) past the fixed warm-up
        self.late_starts_ns: list[int] = []  # when each of them began
        self.late_start: tuple[int, int] | None = None  # (clock, paused) when the first of them began
        self.warm_start = clock_ns()
        self.window_start = self.warm_start
        self.wait: list[int] = []
        self.compute: list[int] = []
        self.fetch: list[int] = []
        self.block: list[int] = []
        self.seen: set[Any] = set()
        self.new_shape: list[tuple[int, int, int, int, int]] = []  # (position, wait, compute, fetch, block)

    def seen_shape(self) -> bool:
        """Whether the last batch's shape was seen before in this mode; records it."""
        try:
            known = self.clocked.shape in self.seen
            self.seen.add(self.clocked.shape)
        except TypeError:  # an unhashable shape: treat as seen (nothing kept out)
            return True
        return known

    def warm_up(self, first_step_is_compile: bool, warmup_until: Callable[[], bool] | None) -> None:
        """The compile step (if it is one), then the fixed warm-up, extended while `warmup_until` is False."""
        rule, guarded, clocked, overlapped = self.rule, self.guarded, self.clocked, self.overlapped
        if first_step_is_compile:
            w, c = guarded(clocked.one)
            self.first_step_ns = w + c + guarded(clocked.drain)  # the first step's own device work included
            self.seen_shape()
            self.warmup_steps += 1
        compile_steps = self.warmup_steps
        while True:
            elapsed_s = (self.clock_ns() - self.warm_start) / 1e9
            wanted = self.warmup_steps - compile_steps < rule.warmup_steps or (
                warmup_until is not None and not warmup_until()
            )
            if not wanted:
                break
            if elapsed_s > rule.warmup_max_seconds:
                self.notes.append(f"warm-up stopped after {elapsed_s:.1f} s before its condition was met")
                break
            late = self.warmup_steps - compile_steps >= rule.warmup_steps
            if late:
                self.late_starts_ns.append(self.clock_ns())
                if self.late_start is None:
                    self.late_start = (self.late_starts_ns[0], self.paused_ns())
            w, c = guarded(clocked.one)
            if late:
                f, b = overlapped.last if overlapped is not None else (0, 0)
                self.late_warmup.append((w, c, f, b))  # past the fixed warm-up: kept if the run ends before timing
            self.seen_shape()
            self.warmup_steps += 1
            if self.progress is not None:
                self.progress(self.name, 0.0, rule.usual_seconds, 0)

    def time_from_late_warmup(self, since_ns: int) -> None:
        """The warm-up's steps past its fixed ones that began at or after `since_ns` become the
        first timed steps (run_mode's `keep_warmup`), unless the step's caller paused while the
        late steps ran."""
        if not self.late_warmup or self.late_start is None or self.paused_ns() != self.late_start[1]:
            return
        first = next((i for i, t in enumerate(self.late_starts_ns) if t >= since_ns), None)
        if first is None:
            return
        self.late_warmup = self.late_warmup[first:]
        self.take_late_warmup()
        self.warmup_steps -= len(self.late_warmup)
        self.window_start, self.paused_at_window_start = self.late_starts_ns[first], self.late_start[1]

    def take_late_warmup(self) -> None:
        """The warm-up's steps past its fixed ones, appended to the timed steps."""
        late = self.late_warmup
        self.wait.extend(w for w, _, _, _ in late)
        self.compute.extend(c for _, c, _, _ in late)
        if self.overlapped is not None:
            self.fetch.extend(f for _, _, f, _ in late)
            self.block.extend(b for _, _, _, b in late)

    def time(self) -> ModeRun:
        """Timed steps until the time cap, the step cap, stable timings, or a decision (`decided`)."""
        rule, overlapped, decided = self.rule, self.overlapped, self.decided
        first_check_s = min(rule.min_seconds, rule.decide_min_seconds) if decided is not None else rule.min_seconds
        first_check_steps = min(rule.min_steps, rule.decide_min_steps) if decided is not None else rule.min_steps
        wait, compute = self.wait, self.compute
        if not wait:  # else timed from the warm-up's late steps (time_from_late_warmup)
            self.window_start = self.clock_ns()
            self.paused_at_window_start = self.paused_ns()
        last_check = 0
        last_progress_ns = 0
        while True:
            w, c = self.guarded(self.clocked.one)
            f, b = overlapped.last if overlapped is not None else (0, 0)
            if self.track_shapes and not self.seen_shape():
                self.new_shape.append((len(wait), w, c, f, b))
            else:
                wait.append(w)
                compute.append(c)
                if overlapped is not None:
                    self.fetch.append(f)
                    self.block.append(b)
            now = self.clock_ns()
            elapsed_s = (now - self.window_start - (self.paused_ns() - self.paused_at_window_start)) / 1e9
            n = len(wait)
            if self.progress is not None and now - last_progress_ns > 50_000_000:
                self.progress(self.name, elapsed_s, rule.usual_seconds, n)
                last_progress_ns = now
            if elapsed_s >= rule.max_seconds:
                return self.finish("time_cap")
            if rule.soft_max_seconds is not None and elapsed_s >= rule.soft_max_seconds and n >= rule.min_steps:
                return self.finish("time_cap")
            if n >= rule.max_steps:
                return self.finish("max_steps")
            # Checking costs O(n log n): do it only when the count has grown by an eighth, and at
            # min_steps itself (where the stable rule's checks began before decide_min_steps).
            grown = n >= last_check * 1.125 or n == rule.min_steps
            if n >= first_check_steps and elapsed_s >= first_check_s and grown:
                last_check = n
                if (elapsed_s >= rule.min_seconds and n >= rule.min_steps
                        and is_stable([a + b for a, b in zip(wait, compute)], rule.rel_half_width,
                                      rule.mean_rel_half_width, rate_only=rule.rate_only)):
                    return self.finish("stable")
                if decided is not None and decided(wait, compute):
                    return self.finish(DECIDED)

    def keep_late_warmup(self) -> None:
        """Interrupted while waiting for the step's speed to settle: keep what those steps measured,
        said so, rather than a mode of no steps."""
        late = self.late_warmup
        if self.wait or not late:
            return
        self.take_late_warmup()
        self.window_start = self.warm_start
        self.notes.append(f"interrupted during warm-up: its last {len(late)} steps (after the first "
                          f"{self.rule.warmup_steps}) stand in for the timings, and may be slower than the steady state")

    def put_back(self) -> None:
        for offset, (at, w, c, f, b) in enumerate(self.new_shape):
            self.wait.insert(at + offset, w)
            self.compute.insert(at + offset, c)
            if self.overlapped is not None:
                self.fetch.insert(at + offset, f)
                self.block.insert(at + offset, b)

    def new_shape_steps(self) -> tuple[int, ...]:
        """The new shapes' first steps kept out of the timings, with their note; or put back, when
        the shapes keep changing."""
        new_shape, notes = self.new_shape, self.notes
        if len(new_shape) > MAX_NEW_SHAPE_STEPS or 2 * len(new_shape) > len(new_shape) + len(self.wait):
            notes.append(f"{len(new_shape)} batch shapes new to the mode among its {len(new_shape) + len(self.wait)} timed "
                         "steps: the shapes keep changing, so each new shape's retrace is part of the steady state "
                         "and stays in the timings")
            self.put_back()
            return ()
        if new_shape:
            kept_ns = tuple(w + c for _, w, c, _, _ in new_shape)
            notes.append(f"first step of each new batch shape ({len(kept_ns)}): "
                         + ", ".join(f"{ns / 1e6:.0f} ms" for ns in kept_ns)
                         + ", kept out of the timings like the first step (a retrace per new input shape)")
            return kept_ns
        return ()

    def finish(self, reason: str, error: BaseException | None = None) -> ModeRun:
        overlapped = self.overlapped
        if overlapped is not None and error is None and reason not in (INTERRUPTED, STALLED):
            try:
                self.guarded(overlapped.drain)  # the last step's work ends inside this mode, not in the next
            except OutOfMemory as oom:
                reason, error = OUT_OF_MEMORY, oom.error
            except Stalled as stall:
                reason, error = "stalled", stall
        kept_ns = self.new_shape_steps()
        paused_ns = self.paused_ns() - self.paused_at_window_start
        if paused_ns >= 10_000_000 and self.wait:
            self.notes.append(f"{paused_ns / 1e9:.2f} s of the window were spent outside any step (the loop's own work "
                              "between steps: a validation pass, an epoch's end), kept out of the step times and the "
                              "window's time cap")
        return ModeRun(
            name=self.name,
            start_ns=self.window_start,
            end_ns=self.clock_ns(),
            wait_ns=tuple(self.wait),
            compute_ns=tuple(self.compute),
            first_step_ns=self.first_step_ns,
            warmup_steps=self.warmup_steps,
            warmup_ns=self.window_start - self.warm_start,
            stop_reason=reason,
            error=None if error is None else ErrorInfo.from_exception(error),
            notes=tuple(self.notes),
            fetch_ns=tuple(self.fetch),
            block_ns=tuple(self.block),
            hideable_ns=self.hideable_ns if overlapped is not None else None,
            new_shape_steps_ns=kept_ns,
        )


def is_stable(step_ns: list[int] | tuple[int, ...], rel_half_width: float, mean_rel_half_width: float,
              rate_only: bool = False) -> bool:
    """Both the median step time and the mean (which sets throughput) are pinned down; with
    `rate_only`, also the mean alone within ±`rel_half_width` (the median's own tolerance).

    The median alone can settle while the mean still swings: a prefetch buffer that drains
    makes step times bimodal, and throughput is n / sum, a mean. The reverse holds too: on such
    a step the median's order-statistic interval spans both kinds of step however long the run,
    while the mean is pinned; a run read only for its rate need not wait for the median.
    """
    mean_width = stats.relative_half_width(stats.batch_means_ci(step_ns), stats.mean(step_ns))
    if mean_width is None:
        return False
    if rate_only and mean_width <= rel_half_width:
        return True
    median_width = stats.relative_half_width(stats.median_ci(step_ns), stats.median(step_ns))
    return median_width is not None and median_width <= rel_half_width and mean_width <= mean_rel_half_width
