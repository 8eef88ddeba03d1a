"""Reading the pipeline's prefixes fresh to say where a batch waits (TensorFlow side).

A first batch that does not come is a py_function that hangs, a read that never returns, or a
shuffle buffer still filling; from outside they look the same. `probe_prefixes` tells them
apart: it reads each stage's prefix (the pipeline cut after it, `PipelineGraph.cut`) fresh, from
the source on, under short deadlines: the first element within `first_s`, then elements for
`window_s` to know the rate. It stops at the first prefix that gives nothing (or gives some, then
stops): every stage before it yields, so that stage is where the wait is. A shuffle buffer (or a
batch) that needs longer to fill than the probe waits, at the rate of the stage before it, is not
read (that would fill a second buffer): it is filling (`analysis.probe`).

`FirstBatchWatch` is the first batch's `Meanwhile` (modes.watchdog): `EARLY_S` into the wait (a
quarter of a shorter deadline) it says so, reads the prefixes while the first batch is still
awaited, says what it found through the progress display, and keeps the deadline, or moves it
for a buffer seen filling. `locate` reads them after a stall in a running mode.

Each read runs under a watchdog of its own (the run's deadline must not fit these calls). A prefix
that gives nothing leaves its worker stuck, like the call it explains; the command line ends the
process anyway. The probe's iterators are dropped in a worker too: a parallel map's iterator
waits, when dropped, for its calls in flight, which may be the hanging ones. Reading a prefix runs
the user's code again beside the awaited call: a generator that shares state between its calls
sees a second reader for a moment.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pipediag.analysis.probe import Finding, early_word, fill_s, keep_waiting_s, read
from pipediag.backends.tf import tf
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.modes.watchdog import Watchdog
from pipediag.records.kinds import FAILED_READ, FILLING, NOTHING, STOPPED, YIELDS
from pipediag.records.stage import Stage
from pipediag.records.stall import PrefixReading, Stalled, seconds_text

EARLY_S = 30.0  # no first batch this long: read the prefixes and say where it waits
FIRST_ELEMENT_S = 5.0  # a fresh prefix's first element, at most (a quarter of a shorter deadline)
WINDOW_S = 1.0  # then its elements are counted this long, for its rate
LOCATE_WINDOW_S = 2.0  # after a stall: read further, a stall after some elements shows
PASS_ON_KINDS = ("options", "prefetch")  # pass the stage before's elements on: not read again
FAST_PER_S = 1000.0  # one next() per element caps the count near this: count in batches beyond it
BATCH_CALL_S = 0.01  # a counting batch holds about this much of the prefix's elements


def probe_prefixes(graph: PipelineGraph, options=None, *, first_s: float = FIRST_ELEMENT_S,
                   window_s: float = WINDOW_S, returned: Callable[[], bool] = lambda: False,
                   clock: Callable[[], float] = time.monotonic) -> tuple[PrefixReading, ...]:
    """Each stage's prefix read fresh, in order, until one does not yield (see the module
    docstring); `returned()` true stops it between prefixes (the awaited batch has come)."""
    dog = Watchdog(floor_s=0.0, clock=clock)
    readings: list[PrefixReading] = []
    rate: float | None = None
    for stage in graph.stages():
        if returned():
            break
        if stage.kind in PASS_ON_KINDS and readings:
            continue
        fill = fill_s(stage.kind, stage.buffer_size, rate)
        if fill is not None and fill > first_s:
            readings.append(PrefixReading(stage.label, FILLING, fill_s=round(fill, 3)))
            break
        reading = _read(graph, stage, options, dog, first_s + (fill or 0.0), window_s, clock)
        readings.append(reading)
        if reading.state != YIELDS:
            break
        rate = reading.per_s
    return tuple(readings)


def locate(graph: PipelineGraph, options, first_s: float) -> tuple[Finding, tuple[PrefixReading, ...]]:
    """After a stall: the prefixes read with `first_s` for a first element, and what they say."""
    readings = probe_prefixes(graph, options, first_s=first_s, window_s=LOCATE_WINDOW_S)
    return read(readings), readings


def _read(graph: PipelineGraph, stage: Stage, options, dog: Watchdog, first_s: float, window_s: float,
          clock: Callable[[], float]) -> PrefixReading:
    """One prefix: nothing within `first_s`, or stopped within the window, or its rate."""
    label = stage.label
    try:
        cut = graph.cut(stage.node)
        if options is not None:
            cut = cut.with_options(options)
    except (GraphError, tf.errors.OpError, ValueError, TypeError) as error:
        return PrefixReading(label, FAILED_READ, reason=_short(error))
    what = f"reading the pipeline up to {label} fresh"
    held: dict[str, Any] = {}  # the iterators live here only, so only a worker ever drops them
    try:
        dog.call(lambda: next(held.setdefault("it", iter(cut))), what, first_s)

        def one() -> int:
            next(held["it"])
            return 1

        count, seconds = _count(one, 1, dog, what, window_s / 2, first_s, clock)
        if count / seconds > FAST_PER_S:  # Python's next() was the limit: count in TensorFlow, in batches
            counting = cut.map(lambda *_: 0).batch(max(2, int(count / seconds * BATCH_CALL_S)))

            def batch() -> int:
                return int(next(held.setdefault("batches", iter(counting))).shape[0])

            more, more_s = _count(batch, 0, dog, what, window_s / 2, first_s, clock)
            count, seconds = max((count, seconds), (more, more_s), key=lambda c: c[0] / c[1])
        return PrefixReading(label, YIELDS, elements=count, seconds=round(seconds, 4))
    except Stalled as stall:
        got = getattr(stall, "count", 0)
        return PrefixReading(label, STOPPED, elements=got) if got else PrefixReading(label, NOTHING, seconds=first_s)
    except StopIteration:
        return PrefixReading(label, FAILED_READ, reason="it ended without an element")
    except Exception as error:  # noqa: BLE001 - a prefix that fails is said, not raised: the run has stalled already
        return PrefixReading(label, FAILED_READ, reason=_short(error))
    finally:
        _drop(dog, held, first_s)


def _count(pull: Callable[[], int], start_count: int, dog: Watchdog, what: str, window_s: float,
           first_s: float, clock: Callable[[], float]) -> tuple[int, float]:
    """Elements pulled (`pull()` says how many each call) for `window_s` in one call under the
    watchdog, and the seconds it took; a prefix that ends counts what it gave. A call that stalls
    raises `Stalled` with `.count`, the elements read before it."""
    got = [start_count]

    def loop() -> None:
        end = clock() + window_s
        try:
            while clock() < end:
                got[0] += pull()
        except StopIteration:
            pass

    start = clock()
    try:
        dog.call(loop, what, window_s + first_s)
    except Stalled as stall:
        stall.count = got[0]
        raise
    return got[0], max(clock() - start, 1e-9)


def _drop(dog: Watchdog, held: dict[str, Any], deadline_s: float) -> None:
    """Drop the probe's iterators in a worker: a drop that waits on a hanging call is left there."""
    if held:
        try:
            dog.call(held.clear, "dropping a probe's iterator", deadline_s)
        except Stalled:
            pass


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class FirstBatchWatch:
    """The first batch's `Meanwhile`: say early where it waits (see the module docstring).
    `phase`: the progress display's phase (a short label with a clock); `note`: a line said once,
    in full (default: `phase`). `fixed`: the deadline is the user's --stall-timeout, kept as given;
    `graph` None: the pipeline's graph could not be read, so only the wait is said."""

    def __init__(self, graph: PipelineGraph | None, options, *, phase: Callable[[str], None], fixed: bool,
                 note: Callable[[str], None] | None = None, early_s: float = EARLY_S,
                 first_s: float = FIRST_ELEMENT_S, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic):
        self.graph, self.options, self.phase, self.note, self.fixed = graph, options, phase, note or phase, fixed
        self.early_s, self.first_s, self.window_s, self.clock = early_s, first_s, window_s, clock
        self.readings: tuple[PrefixReading, ...] = ()
        self.probed_after_s: float | None = None  # None until the prefixes were read

    def at_s(self, deadline_s: float) -> float:
        return min(self.early_s, deadline_s / 4)

    def run(self, waited_s: float, deadline_s: float, returned: Callable[[], bool]) -> float:
        head = f"no first batch after {seconds_text(waited_s)} s"
        if self.graph is None:
            self.note(f"{head}; the pipeline's graph cannot be read, so its stages cannot be read apart: "
                      f"waiting up to {deadline_s:.0f} s")
            return deadline_s
        self.phase("finding where the first batch waits")
        try:
            self.readings = probe_prefixes(self.graph, self.options, first_s=min(self.first_s, deadline_s / 4),
                                           window_s=min(self.window_s, deadline_s / 8), returned=returned,
                                           clock=self.clock)
        except Exception as error:  # noqa: BLE001 - the probe only explains a wait: it never ends the run
            self.note(f"{head}; its stages could not be read: {_short(error)}")
            return deadline_s
        self.probed_after_s = waited_s
        if returned():
            return deadline_s
        finding = read(self.readings)
        kept = keep_waiting_s(finding, waited_s, deadline_s, self.fixed)
        self.note(early_word(finding, waited_s) + f" (waiting up to {kept:.0f} s in all)")
        self.phase("waiting for the first batch")
        return kept

    @property
    def finding(self) -> Finding | None:
        return None if self.probed_after_s is None else read(self.readings)
