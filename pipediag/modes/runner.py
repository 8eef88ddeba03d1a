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
from dataclasses import dataclass, replace
from typing import Any

from pipediag import stats
from pipediag.errors import UserCodeError
from pipediag.records.stall import Stalled
from pipediag.modes.watchdog import Watchdog
from pipediag.oom import is_out_of_memory
from pipediag.records.run import StopRule, ErrorInfo, ModeRun

ProgressFn = Callable[[str, float, float, int], None]  # mode, elapsed_s, cap_s, steps


EDGE_WINDOW_FACTOR = 2.0  # how much longer a mode runs again when a reading sat on a threshold


def longer(rule: StopRule, factor: float = EDGE_WINDOW_FACTOR) -> StopRule:
    """The rule for measuring a mode again because a verdict reading sat within its spread of a
    threshold: a window `factor` times the cap, run to its end (the interval that let the first
    run stop early was tight enough for the mode, not for the decision). Bounded: once, 2x."""
    seconds = rule.max_seconds * factor
    return replace(rule, max_seconds=seconds, min_seconds=seconds, min_steps=int(rule.min_steps * factor))


# More batch shapes new to a mode than this within its timed steps are not a finite epoch's
# boundary (a short last batch, a few length buckets) but shapes that keep changing (padding to
# each batch's longest element): then every new shape's retrace is part of the steady state, and
# those steps stay in the timings. So do they when they are most of the timed steps (a short run
# of ever-new shapes): a finite epoch repeats its shapes, so its new ones are a minority.
MAX_NEW_SHAPE_STEPS = 8


def batch_shape(batch: Any) -> Any:
    """The shapes of a batch's arrays (nested tuples, dict keys sorted), what tf.function, Keras and
    jax.jit key their traces on; None for an element without a shape. No framework imported: a
    TensorFlow TensorShape, a NumPy shape and a torch.Size all iterate as dimensions."""
    if isinstance(batch, dict):
        return tuple((str(k), batch_shape(batch[k])) for k in sorted(batch, key=str))
    if isinstance(batch, (list, tuple)):
        return tuple(batch_shape(v) for v in batch)
    shape = getattr(batch, "shape", None)
    if shape is None:
        return None
    try:
        return tuple(None if d is None else int(d) for d in shape)
    except (TypeError, ValueError):
        return None


class _OutOfMemory(Exception):
    def __init__(self, error: BaseException):
        self.error = error


@dataclass
class _Clocked:
    clock_ns: Callable[[], int]
    next_batch: Callable[[], Any]
    step: Callable[[Any], Any] | None
    doing: str = "fetch"  # what the last call was doing: "fetch" (a batch) or "step"; names a stall
    shape: Any = None  # the last batch's shapes (batch_shape)

    def one(self) -> tuple[int, int]:
        t0 = self.clock_ns()
        self.doing = "fetch"
        batch = self._fetch()
        t1 = self.clock_ns()
        self.shape = batch_shape(batch)
        if self.step is not None:
            self.doing = "step"
            self._guard(lambda: self.step(batch))
        t2 = self.clock_ns()
        return t1 - t0, t2 - t1

    def drain(self) -> int:
        return 0

    def _fetch(self) -> Any:
        try:
            return self.next_batch()
        except (StopIteration, KeyboardInterrupt):
            raise
        except Exception as error:
            raise UserCodeError("pipeline", error, "the error happened while producing a batch") from error

    @staticmethod
    def _guard(fn: Callable[[], Any]) -> Any:
        """Run the user's step (or wait for it): out of memory ends the mode, other errors are theirs."""
        try:
            return fn()
        except KeyboardInterrupt:
            raise
        except Exception as error:
            if is_out_of_memory(error):
                raise _OutOfMemory(error) from error
            raise UserCodeError("step", error, "the step failed on a batch from the pipeline") from error


class Overlapped(_Clocked):
    """Lag-1 stepping for a dispatchable step: fetch batch i, wait for step i-1, dispatch step i.

    While batch i is fetched, step i-1 runs on the device. The device work a fetch can hide
    behind is what is left of a step after its dispatch returns: `hideable_ns`, measured in
    synthetic mode as the median wait for the previous step (input is free there, so that wait
    is all device work, plus the fixed cost of asking). The part of a fetch beyond it is time the
    device sat idle for input: the step's wait. Without that figure the whole fetch counts (an
    upper bound). A host step (NumPy) returns finished work: its `hideable_ns` is ~0 and its
    whole fetch counts, as in synchronous timing.

    The wait for the previous step after each fetch is recorded too (`block_ns`), but not used
    to decide: on the H200 asking a finished JAX step took 20-80 µs, as long as a short step's
    remaining work, so "still busy" cannot be read from it reliably.
    """

    def __init__(self, clock_ns, next_batch, dispatch, hideable_ns: int | None):
        super().__init__(clock_ns, next_batch, None)
        self.dispatch = dispatch
        self.hideable_ns = hideable_ns
        self.pending: Callable[[], Any] | None = None
        self.last = (0, 0)  # the last step's (fetch, block) nanoseconds

    def one(self) -> tuple[int, int]:
        t0 = self.clock_ns()
        self.doing = "fetch"
        batch = self._fetch()
        t1 = self.clock_ns()
        self.shape = batch_shape(batch)
        self.drain()
        t2 = self.clock_ns()
        self.doing = "step"
        self.pending = self._guard(lambda: self.dispatch(batch))
        t3 = self.clock_ns()
        fetch, block = t1 - t0, t2 - t1
        exposed = max(0, fetch - (self.hideable_ns or 0))
        self.last = (fetch, block)
        return exposed, (t3 - t0) - exposed

    def drain(self) -> int:
        """Wait for the step in flight, if any; returns the nanoseconds waited."""
        if self.pending is None:
            return 0
        finish, self.pending = self.pending, None
        self.doing = "step"
        t0 = self.clock_ns()
        self._guard(finish)
        return self.clock_ns() - t0


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
    back into the timings, with a note."""
    if dispatch is not None and step is not None:
        raise ValueError("give step or dispatch, not both")
    overlapped = Overlapped(clock_ns, next_batch, dispatch, hideable_ns) if dispatch is not None else None
    clocked = overlapped or _Clocked(clock_ns, next_batch, step)
    guarded = _guarded(clocked, watchdog, name)
    notes: list[str] = []
    first_step_ns: int | None = None
    warmup_steps = 0
    late_warmup: list[tuple[int, int, int, int]] = []  # (wait, compute, fetch, block) past the fixed warm-up
    warm_start = clock_ns()
    window_start = warm_start
    wait: list[int] = []
    compute: list[int] = []
    fetch: list[int] = []
    block: list[int] = []
    track_shapes = step is not None or dispatch is not None
    seen: set[Any] = set()
    new_shape: list[tuple[int, int, int, int, int]] = []  # (position, wait, compute, fetch, block)

    def seen_shape() -> bool:
        """Whether the last batch's shape was seen before in this mode; records it."""
        try:
            known = clocked.shape in seen
            seen.add(clocked.shape)
        except TypeError:  # an unhashable shape: treat as seen (nothing kept out)
            return True
        return known

    def put_back() -> None:
        for offset, (at, w, c, f, b) in enumerate(new_shape):
            wait.insert(at + offset, w)
            compute.insert(at + offset, c)
            if overlapped is not None:
                fetch.insert(at + offset, f)
                block.insert(at + offset, b)

    def finish(reason: str, error: BaseException | None = None) -> ModeRun:
        if overlapped is not None and error is None and reason not in ("interrupted", "stalled"):
            try:
                guarded(overlapped.drain)  # the last step's work ends inside this mode, not in the next
            except _OutOfMemory as oom:
                reason, error = "out_of_memory", oom.error
            except Stalled as stall:
                reason, error = "stalled", stall
        kept_ns: tuple[int, ...] = ()
        if len(new_shape) > MAX_NEW_SHAPE_STEPS or 2 * len(new_shape) > len(new_shape) + len(wait):
            notes.append(f"{len(new_shape)} batch shapes new to the mode among its {len(new_shape) + len(wait)} timed "
                         "steps: the shapes keep changing, so each new shape's retrace is part of the steady state "
                         "and stays in the timings")
            put_back()
        elif new_shape:
            kept_ns = tuple(w + c for _, w, c, _, _ in new_shape)
            notes.append(f"first step of each new batch shape ({len(kept_ns)}): "
                         + ", ".join(f"{ns / 1e6:.0f} ms" for ns in kept_ns)
                         + ", kept out of the timings like the first step (a retrace per new input shape)")
        return ModeRun(
            name=name,
            start_ns=window_start,
            end_ns=clock_ns(),
            wait_ns=tuple(wait),
            compute_ns=tuple(compute),
            first_step_ns=first_step_ns,
            warmup_steps=warmup_steps,
            warmup_ns=window_start - warm_start,
            stop_reason=reason,
            error=None if error is None else ErrorInfo.from_exception(error),
            notes=tuple(notes),
            fetch_ns=tuple(fetch),
            block_ns=tuple(block),
            hideable_ns=hideable_ns if overlapped is not None else None,
            new_shape_steps_ns=kept_ns,
        )

    try:
        if first_step_is_compile:
            w, c = guarded(clocked.one)
            first_step_ns = w + c + guarded(clocked.drain)  # the first step's own device work included
            seen_shape()
            warmup_steps += 1
        compile_steps = warmup_steps
        while True:
            elapsed_s = (clock_ns() - warm_start) / 1e9
            wanted = warmup_steps - compile_steps < rule.warmup_steps or (
                warmup_until is not None and not warmup_until()
            )
            if not wanted:
                break
            if elapsed_s > rule.warmup_max_seconds:
                notes.append(f"warm-up stopped after {elapsed_s:.1f} s before its condition was met")
                break
            w, c = guarded(clocked.one)
            if warmup_steps - compile_steps >= rule.warmup_steps:
                f, b = overlapped.last if overlapped is not None else (0, 0)
                late_warmup.append((w, c, f, b))  # past the fixed warm-up: kept if the run ends before timing
            seen_shape()
            warmup_steps += 1
            if progress is not None:
                progress(name, 0.0, rule.max_seconds, 0)

        window_start = clock_ns()
        last_check = 0
        last_progress_ns = 0
        while True:
            w, c = guarded(clocked.one)
            f, b = overlapped.last if overlapped is not None else (0, 0)
            if track_shapes and not seen_shape():
                new_shape.append((len(wait), w, c, f, b))
            else:
                wait.append(w)
                compute.append(c)
                if overlapped is not None:
                    fetch.append(f)
                    block.append(b)
            now = clock_ns()
            elapsed_s = (now - window_start) / 1e9
            n = len(wait)
            if progress is not None and now - last_progress_ns > 50_000_000:
                progress(name, elapsed_s, rule.max_seconds, n)
                last_progress_ns = now
            if elapsed_s >= rule.max_seconds:
                return finish("time_cap")
            if n >= rule.max_steps:
                return finish("max_steps")
            # Checking costs O(n log n): do it only when the count has grown by an eighth.
            if n >= rule.min_steps and elapsed_s >= rule.min_seconds and n >= last_check * 1.125:
                last_check = n
                if is_stable([a + b for a, b in zip(wait, compute)], rule.rel_half_width, rule.mean_rel_half_width):
                    return finish("stable")
    except _OutOfMemory as oom:
        return finish("out_of_memory", oom.error)
    except StopIteration:
        return finish("input_exhausted")
    except KeyboardInterrupt:
        if not wait and late_warmup:
            # Interrupted while waiting for the step's speed to settle: keep what those steps
            # measured, said so, rather than a mode of no steps.
            wait.extend(w for w, _, _, _ in late_warmup)
            compute.extend(c for _, c, _, _ in late_warmup)
            if overlapped is not None:
                fetch.extend(f for _, _, f, _ in late_warmup)
                block.extend(b for _, _, _, b in late_warmup)
            window_start = warm_start
            notes.append(f"interrupted during warm-up: its last {len(late_warmup)} steps (after the first "
                         f"{rule.warmup_steps}) stand in for the timings, and may be slower than the steady state")
        return finish("interrupted")
    except Stalled as stall:
        return finish("stalled", stall)


def _guarded(clocked: _Clocked, watchdog: Watchdog | None, mode: str) -> Callable[[Callable[[], Any]], Any]:
    """Call `fn` under the watchdog's deadline; a stall is named by what the step was doing."""
    if watchdog is None:
        return lambda fn: fn()

    def call(fn: Callable[[], Any]) -> Any:
        try:
            return watchdog.call(fn, f"{mode} mode")
        except Stalled as stall:
            stall.in_step = clocked.doing == "step"
            doing = ("inside the step (it did not return)" if stall.in_step
                     else "waiting for the next batch from the pipeline")
            stall.what = f"{mode} mode, {doing}"
            raise

    return call


def is_stable(step_ns: list[int] | tuple[int, ...], rel_half_width: float, mean_rel_half_width: float) -> bool:
    """Both the median step time and the mean (which sets throughput) are pinned down.

    The median alone can settle while the mean still swings: a prefetch buffer that drains
    makes step times bimodal, and throughput is n / sum, a mean.
    """
    for estimate, interval, tolerance in (
        (stats.median(step_ns), stats.median_ci(step_ns), rel_half_width),
        (stats.mean(step_ns), stats.batch_means_ci(step_ns), mean_rel_half_width),
    ):
        width = stats.relative_half_width(interval, estimate)
        if width is None or width > tolerance:
            return False
    return True
