"""One step on an injected clock: fetch a batch, run the step (or keep one step in flight, `Overlapped`),
say what the step was doing when the watchdog ends it, and turn the step's out-of-memory error into OutOfMemory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipediag.errors import UserCodeError
from pipediag.modes.watchdog import Watchdog
from pipediag.oom import is_out_of_memory
from pipediag.records.stall import Stalled


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


class OutOfMemory(Exception):
    def __init__(self, error: BaseException):
        self.error = error


@dataclass
class Clocked:
    clock_ns: Callable[[], int]
    next_batch: Callable[[], Any]
    step: Callable[[Any], Any] | None
    doing: str = "fetch"  # what the last call was doing: "fetch" (a batch) or "step"; names a stall
    shape: Any = None  # the last batch's shapes (batch_shape)
    paused_ns: Callable[[], int] | None = None  # Step.paused_ns: kept out of the step's time

    def one(self) -> tuple[int, int]:
        t0, t1, batch = self._fetch_timed()
        paused0 = self.paused_ns() if self.paused_ns is not None else 0
        if self.step is not None:
            self.doing = "step"
            self._guard(lambda: self.step(batch))
        t2 = self.clock_ns()
        if self.paused_ns is not None:
            return t1 - t0, max(0, t2 - t1 - (self.paused_ns() - paused0))
        return t1 - t0, t2 - t1

    def drain(self) -> int:
        return 0

    def _fetch_timed(self) -> tuple[int, int, Any]:
        """The next batch on the clock: (start, end, batch), its shapes recorded."""
        t0 = self.clock_ns()
        self.doing = "fetch"
        batch = self._fetch()
        t1 = self.clock_ns()
        self.shape = batch_shape(batch)
        return t0, t1, batch

    def _fetch(self) -> Any:
        try:
            return self.next_batch()
        except (StopIteration, KeyboardInterrupt):
            raise
        except (Exception, SystemExit) as error:  # sys.exit in their code too: errors.UserCodeError
            raise UserCodeError("pipeline", error, "the error happened while producing a batch") from error

    @staticmethod
    def _guard(fn: Callable[[], Any]) -> Any:
        """Run the user's step (or wait for it): out of memory ends the mode, other errors are theirs."""
        try:
            return fn()
        except KeyboardInterrupt:
            raise
        except (Exception, SystemExit) as error:  # sys.exit in their code too: errors.UserCodeError
            if is_out_of_memory(error):
                raise OutOfMemory(error) from error
            raise UserCodeError("step", error, "the step failed on a batch from the pipeline") from error


class Overlapped(Clocked):
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
        t0, t1, batch = self._fetch_timed()
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


def guarded(clocked: Clocked, watchdog: Watchdog | None, mode: str) -> Callable[[Callable[[], Any]], Any]:
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
