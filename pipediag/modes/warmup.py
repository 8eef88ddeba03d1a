"""Warm-up until the step's speed stops rising, not for a fixed number of steps.

Some steps keep speeding up for seconds after their first call: a Keras LSTM on the 2-core machine
ran 21, 26, 34, 36, 38, 41, 41 steps/s in consecutive 2.5-s windows of the same constant batch
(issue 13, real/kerasio_timeseries; oneDNN primitives and allocator pools settle). The synthetic
mode runs first, so five warm-up steps then measured the step at 26/s while the modes after it ran
on a faster step: the fed step's slowdown was overstated and a tuned pipeline "beat" free input.

`Settled` is a `warmup_until` condition for `run_mode`: it is asked once per warm-up step, groups
the steps into windows of at least WINDOW_S seconds and MIN_WINDOW_STEPS steps (a slow step's
window closes at LONG_WINDOW_S with at least FEW_WINDOW_STEPS), and is met when the latest
window's rate is no more than RISE above that of the latest window that began at least LOOKBACK_S
(1.5 s) before it (a rise slower than one window's noise shows only across several). A step that is steady from
the start costs four 0.5-s windows (2.0 s) if it is under 25 ms, three of up to 0.8 s if slower
(shorter windows under a short mode cap). The windows that settled it (`settled_since_ns`)
become the start of synthetic mode's timed window rather than a cost before it, also after a
step that rose before them.
It gives up after `max_seconds`, and then says the step was still speeding up where its windows
show it.
Pure Python, with an injected clock.
"""

from __future__ import annotations

from collections.abc import Callable

WINDOW_S = 0.5  # a window lasts at least this long...
MIN_WINDOW_STEPS = 20  # ...and holds this many steps,
LONG_WINDOW_S = 0.75  # or, for a slow step, this long
FEW_WINDOW_STEPS = 3  # with at least this many
RISE = 0.05  # a window more than 5% faster than the one LOOKBACK_S before it: still warming up
LOOKBACK_S = 1.5  # two long windows: a rise slower than one window's noise shows only across more
WARMUP_CAP_FACTOR = 1.5  # the settling warm-up may take up to 1.5x a mode's own cap (--max-seconds)


class Settled:
    """Callable warm-up condition: True once the step's rate has stopped rising."""

    def __init__(self, clock_ns: Callable[[], int], max_seconds: float, window_s: float | None = None,
                 cap_seconds: float | None = None):
        """`max_seconds`: the most the warm-up may take. `window_s`: a window's shortest length,
        default WINDOW_S (LONG_WINDOW_S for a slow step); both are shortened to an eighth of
        `cap_seconds` (the mode's cap the windows become part of; default `max_seconds`) for short
        caps, so that a steady step's windows stay a small part of the mode (a 1-s mode cap:
        0.125-s windows). A `window_s` given is every window's length."""
        self._clock_ns = clock_ns
        self._max_ns = int(max_seconds * 1e9)
        if window_s is None:
            long_window_s = min(LONG_WINDOW_S, (max_seconds if cap_seconds is None else cap_seconds) / 8)
            window_s = min(WINDOW_S, long_window_s)
        else:
            long_window_s = window_s
        self.window_s = window_s
        self._window_ns = int(window_s * 1e9)
        self._long_window_ns = int(long_window_s * 1e9)
        # LOOKBACK_S, shortened with the windows under a short cap (two long windows)
        self._lookback_ns = int(min(LOOKBACK_S, 2 * long_window_s) * 1e9)
        self._start_ns: int | None = None
        self._window_start_ns = 0
        self._steps = 0
        self.rates: list[float] = []  # steps per second of each closed window
        self.window_starts_ns: list[int] = []  # when each closed window began
        self.gave_up = False

    def __call__(self) -> bool:
        now = self._clock_ns()
        if self._start_ns is None:  # first call: the fixed warm-up steps are done, windows begin
            self._start_ns = self._window_start_ns = now
            return False
        self._steps += 1
        elapsed = now - self._window_start_ns
        if (elapsed >= self._window_ns and self._steps >= MIN_WINDOW_STEPS
                or elapsed >= self._long_window_ns and self._steps >= FEW_WINDOW_STEPS):
            self.rates.append(self._steps * 1e9 / elapsed)
            self.window_starts_ns.append(self._window_start_ns)
            self._window_start_ns, self._steps = now, 0
            if self.settled:
                return True
        if now - self._start_ns >= self._max_ns:
            self.gave_up = True
            return True
        return False

    def _reference(self) -> int | None:
        """The index of the latest window that began at least the lookback before the last one did."""
        last = len(self.rates) - 1
        for j in range(last - 1, -1, -1):
            if self.window_starts_ns[last] - self.window_starts_ns[j] >= self._lookback_ns:
                return j
        return None

    @property
    def settled(self) -> bool:
        j = self._reference()
        return j is not None and self.rates[-1] <= self.rates[j] * (1 + RISE)

    @property
    def settled_since_ns(self) -> int | None:
        """When the windows that settled the warm-up began (the last window and those since the
        one it was compared with, LOOKBACK_S earlier): the latest no more than RISE faster than
        the first of them, so the step no longer rose over them, and their steps become the start
        of synthetic mode's timed window (run_mode's `keep_warmup`) instead of a cost before a
        window of its own. Whether they vary too much from one to the next is the stable rule's
        call, as for any timed window. None when the warm-up ran out of time before it settled
        (then the mode times afresh after it)."""
        if self.gave_up or not self.settled:
            return None
        return self.window_starts_ns[self._reference()]

    @property
    def steady(self) -> bool:
        """Steady from the first window on: settled at its first check, no window more than RISE faster than another."""
        return (self.settled_since_ns is not None and self._reference() == 0
                and max(self.rates) <= min(self.rates) * (1 + RISE))

    @property
    def seconds(self) -> float:
        return 0.0 if self._start_ns is None else (self._clock_ns() - self._start_ns) / 1e9

    def note(self) -> str | None:
        """What the warm-up saw, when it was more than a steady step's windows."""
        if self.gave_up:
            # Out of time: say so only where the windows show a rise, not for a steady step whose
            # windows did not all fit.
            if len(self.rates) >= 2 and self.rates[-1] > self.rates[0] * (1 + RISE):
                return (f"the step was still speeding up after {self.seconds:.1f} s of warm-up (windows of "
                        f"{self.window_s:.2f} s: {self.rates[0]:.1f} to {self.rates[-1]:.1f} steps/s): synthetic mode "
                        "may understate its steady speed")
            return None
        if self._reference() not in (None, 0) and self.rates[-1] > self.rates[0] * (1 + RISE):
            return (f"the step sped up during warm-up from {self.rates[0]:.1f} to {self.rates[-1]:.1f} steps/s "
                    f"over {self.seconds:.1f} s; synthetic mode was timed once it had settled")
        return None


def settling_warmup(clock_ns: Callable[[], int], mode_max_seconds: float) -> Settled:
    """The warm-up condition of a synthetic mode capped at `mode_max_seconds` (diagnose, scale):
    up to WARMUP_CAP_FACTOR times that cap, its windows an eighth of the mode's cap at most.
    The settling windows become the start of the mode's timed window, so they are sized on the
    mode's cap: under --quick's 3-s cap, 0.375-s windows settle a steady step in 1.1 s, where
    windows sized on the warm-up's 4.5-s cap (0.5 s) took 2.0 s, two thirds of the cap. From
    a 6-s cap up (the default's 10 s) the windows are WINDOW_S and LONG_WINDOW_S either way."""
    return Settled(clock_ns, max_seconds=WARMUP_CAP_FACTOR * mode_max_seconds, cap_seconds=mode_max_seconds)


# A first pass whose projected time exceeds this share of the warm-up cap is not waited for at
# all: better to say the modes timed the uncached pass than to spend the cap and still time it.
FILL_PROJECTION_AFTER_S = 2.0  # project only after this long (the first batches are not typical)


class CacheFilled:
    """Callable warm-up condition for a pipeline that caches: True once one full pass
    (`pass_batches`) has gone through the feed, so the cache is complete and every later iterator
    of the dataset reads from it (tf.data shares an in-memory cache between the dataset's iterators
    once one pass has finished). It gives up at once when, after FILL_PROJECTION_AFTER_S, the pass
    is projected to take longer than `max_seconds`; then `gave_up_projected_s` says how long."""

    def __init__(self, batches: Callable[[], int], pass_batches: int, clock_ns: Callable[[], int], max_seconds: float):
        self._batches, self.pass_batches = batches, pass_batches
        self._clock_ns, self._max_seconds = clock_ns, max_seconds
        self._start_ns: int | None = None
        self._start_batches = 0
        self.seconds = 0.0
        self.filled = False
        self.gave_up_projected_s: float | None = None

    def __call__(self) -> bool:
        now, taken = self._clock_ns(), self._batches()
        if self._start_ns is None:
            self._start_ns, self._start_batches = now, taken
        self.seconds = (now - self._start_ns) / 1e9
        if taken > self.pass_batches:
            self.filled = True
            return True
        done = taken - self._start_batches
        if self.seconds >= FILL_PROJECTION_AFTER_S and done > 0:
            projected_s = self.seconds * (self.pass_batches - self._start_batches) / done
            if projected_s > self._max_seconds:
                self.gave_up_projected_s = projected_s
                return True
        return False
