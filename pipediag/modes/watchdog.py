"""A deadline on every call into the user's pipeline and step, so a stalled one cannot hang pipediag.

A `py_function` that never returns (a network read that hangs) or a step stuck on its device
blocks inside C++ (`get_next`, a device sync) with the GIL released. A Python thread blocked
there cannot be interrupted: not by a timer, not by Ctrl-C, whose handler runs only once the
main thread is back in Python. So each guarded call runs in a daemon worker thread, and the
caller waits for it with a deadline (`Event.wait`, which Ctrl-C and SIGTERM do interrupt). A
call that misses its deadline raises `Stalled` in the caller; its worker is abandoned (it may
return some day, or never) and the next call gets a fresh one.

The deadline, unless the user sets one (`--stall-timeout`), fits the slowest call seen so far:
`SLOWEST_FACTOR` times it, never below `FLOOR_S`. Before any call has returned (the first batch,
which fills shuffle buffers and opens files) it is `FIRST_CALL_S`, two minutes: a first batch
that has not come by then ends the run as stalled, unless the caller's `Meanwhile` (the first
batch's watch, modes.probe) has seen a buffer filling and moved the deadline. While a call is
awaited, a `Meanwhile` runs in the caller's thread once, so what is happening is found and said
before the deadline. A stall is a fact about the process, not one run: `stuck_threads()` counts
the workers still inside a call, so the command line can end the process without waiting for
them (see `cli.main`).

One handoff per call costs tens of microseconds; the runner times fetch and step *inside* the
worker, so the handoff is not part of any measured step.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from pipediag.records.stall import Stalled

FLOOR_S = 60.0  # no default deadline is shorter: a slow remote read or a GC pause is not a stall
SLOWEST_FACTOR = 10.0  # a call 10x slower than any before it, and over the floor, is stuck
FIRST_CALL_S = 120.0  # before anything returned: a first batch seen filling a buffer may get longer

_workers: list[_Worker] = []  # every worker started in this process
_lock = threading.Lock()


class _Job:
    """One call. `done` is a bare lock, held until the call returns: the caller waits by acquiring
    it. A bare lock's acquire is interrupted by a signal cleanly (the handler's KeyboardInterrupt
    leaves it unheld); `Event.wait` is not always: an interrupt that lands inside its Condition's
    bookkeeping raised "release unlocked lock" instead of KeyboardInterrupt (seen with SIGTERM)."""

    __slots__ = ("fn", "done", "result", "error")

    def __init__(self, fn: Callable[[], Any]):
        self.fn = fn
        self.done = threading.Lock()
        self.done.acquire()
        self.result: Any = None
        self.error: BaseException | None = None


class _Worker(threading.Thread):
    """Runs the jobs handed over through `submit`, one at a time. The handoff is a SimpleQueue
    (C code, no Python-level lock a signal could interrupt halfway)."""

    def __init__(self) -> None:
        super().__init__(name="pipediag-watchdog-worker", daemon=True)
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.busy = False

    def submit(self, job: _Job) -> None:
        self.busy = True
        self._jobs.put(job)

    def run(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job.result = job.fn()
            except BaseException as error:  # noqa: BLE001 (handed to the caller, which re-raises it)
                job.error = error
            finally:
                self.busy = False
                job.done.release()


class Meanwhile(Protocol):
    """Work for the caller's thread while a guarded call is awaited (modes.probe.FirstBatchWatch)."""

    def at_s(self, deadline_s: float) -> float:
        """When, into the wait, `run` is called (at or past the deadline: never)."""
        ...

    def run(self, waited_s: float, deadline_s: float, returned: Callable[[], bool]) -> float:
        """Called once, `waited_s` into the wait; `returned()` says whether the call has returned
        since. Returns the deadline (seconds from the start of the wait) to keep waiting to."""
        ...


def stuck_threads() -> int:
    """How many worker threads of this process are still inside a call they were abandoned in."""
    with _lock:
        return sum(1 for w in _workers if w.busy and w.is_alive())


class Watchdog:
    """Runs calls with a deadline. `timeout_s`: a fixed deadline (the user's `--stall-timeout`);
    None: fit it to the slowest call seen (see the module docstring)."""

    def __init__(self, timeout_s: float | None = None, *, floor_s: float = FLOOR_S,
                 factor: float = SLOWEST_FACTOR, first_call_s: float = FIRST_CALL_S,
                 clock: Callable[[], float] = time.monotonic):
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.timeout_s, self.floor_s, self.factor, self.first_call_s = timeout_s, floor_s, factor, first_call_s
        self.clock = clock
        self.slowest_s: float | None = None
        self.last_stall: Stalled | None = None  # the last call that missed its deadline
        self._worker: _Worker | None = None

    def deadline_s(self) -> float:
        if self.timeout_s is not None:
            return self.timeout_s
        if self.slowest_s is None:
            return max(self.floor_s, self.first_call_s)
        return max(self.floor_s, self.factor * self.slowest_s)

    def seen(self, seconds: float) -> None:
        """A call made elsewhere (the first batch, timed before the watchdog existed) took this long."""
        self.slowest_s = seconds if self.slowest_s is None else max(self.slowest_s, seconds)

    def call(self, fn: Callable[[], Any], what: str, deadline_s: float | None = None, *,
             meanwhile: Meanwhile | None = None, fits: bool = True) -> Any:
        """fn() in the worker; its result, or its exception re-raised here; `Stalled` when it
        does not return within `deadline_s` (default: `deadline_s()`, which `meanwhile` may move).
        A KeyboardInterrupt while waiting abandons the call too, and propagates. `fits`: the
        call's time is one the default deadline fits (a batch, a step); False for a read with a
        budget of its own (the tuning plan's), which must not stretch the deadline of batches."""
        deadline = self.deadline_s() if deadline_s is None else deadline_s
        worker = self._worker
        if worker is None or not worker.is_alive() or worker.busy:
            worker = _Worker()
            worker.start()
            with _lock:
                _workers[:] = [w for w in _workers if w.is_alive()] + [worker]
            self._worker = worker
        job = _Job(fn)
        start = self.clock()
        worker.submit(job)
        try:
            finished, deadline = self._wait(job, deadline, start, meanwhile)
        except BaseException:
            self._worker = None  # still inside the call: the next one gets a fresh worker
            raise
        waited = self.clock() - start
        if not finished:
            self._worker = None
            self.last_stall = Stalled(what, waited, deadline)
            raise self.last_stall
        if job.error is not None:
            error, job.error = job.error, None
            raise error
        if fits:
            self.seen(waited)
        return job.result

    def _wait(self, job: _Job, deadline: float, start: float, meanwhile: Meanwhile | None) -> tuple[bool, float]:
        """Whether the job returned in time, and the deadline it was given in the end."""
        at = deadline if meanwhile is None else meanwhile.at_s(deadline)
        if at >= deadline:
            return job.done.acquire(timeout=deadline), deadline
        if job.done.acquire(timeout=at):
            return True, deadline
        deadline = meanwhile.run(self.clock() - start, deadline, lambda: not job.done.locked())
        return job.done.acquire(timeout=max(0.0, deadline - (self.clock() - start))), deadline


def direct(fn: Callable[[], Any], what: str) -> Any:
    """No watchdog: call fn in this thread (tests with a scripted clock, library callers who opt out)."""
    return fn()
