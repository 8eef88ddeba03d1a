"""The settling warm-up on a scripted clock (no TensorFlow)."""

import pytest

from pipediag.modes.runner import run_mode
from pipediag.modes.warmup import Settled, settling_warmup
from pipediag.records.run import StopRule
from tests.clocks import FakeClock


def drive(step_ms_at, max_seconds=30.0):
    """Calls the condition once per step as run_mode does; step i takes step_ms_at(t_s) ms."""
    clock = FakeClock()
    settled = Settled(clock, max_seconds=max_seconds)
    steps = 0
    while not settled():
        clock.ns += int(step_ms_at(clock.ns / 1e9) * 1e6)
        steps += 1
        assert steps < 100_000
    return settled, clock.ns / 1e9


def test_a_steady_step_costs_three_windows():
    settled, seconds = drive(lambda t: 10.0)
    assert not settled.gave_up and len(settled.rates) == 4
    assert seconds == pytest.approx(2.0, abs=0.05)  # four 0.5-s windows of 50 steps: 1.5 s from first to last
    assert settled.note() is None


@pytest.mark.parametrize("step_ms, window_s, windows", [
    (1.0, 0.5, 4),  # 500 steps a window; the last begins 1.5 s after the first
    (25.0, 0.5, 4),  # 20 steps: the fewest a short window holds
    (30.0, 0.6, 4),  # a window waits for its 20 steps...
    (40.0, 0.76, 3),  # ...up to 0.75 s (19 steps, closed by the step that crossed it)
    (200.0, 0.8, 3),  # then closes with 3 or more steps (4 here)
])
def test_a_slow_steps_windows_last_until_they_hold_enough_steps(step_ms, window_s, windows):
    settled, seconds = drive(lambda t: step_ms)
    assert len(settled.rates) == windows and settled.steady
    assert settled.settled_since_ns == settled.window_starts_ns[0]
    assert seconds == pytest.approx(windows * window_s, abs=0.01)


def test_a_step_that_speeds_up_for_seconds_is_warmed_until_it_settles():
    # real/kerasio_timeseries' Keras LSTM: ~48 ms at first, ~24 ms from about 10 s on.
    settled, seconds = drive(lambda t: max(24.0, 48.0 - 2.4 * t))
    assert not settled.gave_up
    assert seconds >= 9.0
    assert settled.rates[-1] == pytest.approx(1000 / 24, rel=0.05)
    assert "sped up during warm-up" in settled.note()


def test_a_step_still_rising_at_the_cap_says_so():
    settled, seconds = drive(lambda t: max(5.0, 100.0 - 9 * t), max_seconds=4.0)
    assert settled.gave_up and seconds == pytest.approx(4.0, abs=0.2)
    assert "still speeding up" in settled.note()


def test_noise_without_a_trend_does_not_extend_the_warm_up_far():
    pattern = [10.0, 11.0, 9.5, 10.5]
    calls = {"i": 0}

    def noisy(t):
        calls["i"] += 1
        return pattern[(int(t / 0.5)) % 4]

    settled, seconds = drive(noisy)
    assert not settled.gave_up and seconds < 6.0


def test_run_mode_keeps_the_settling_steps_out_of_the_timings():
    clock = FakeClock()
    settled = Settled(clock, max_seconds=30.0)
    state = {"n": 0}

    def step(batch):
        state["n"] += 1
        clock.ns += int(max(10.0, 40.0 - 3.0 * clock.ns / 1e9) * 1e6)

    run = run_mode("synthetic", lambda: 1, step, StopRule(max_seconds=3.0, min_seconds=1.0, min_steps=10),
                   clock_ns=clock, warmup_until=settled, first_step_is_compile=True)
    assert run.warmup_ns / 1e9 >= 9.0
    assert max(run.compute_ns) <= 11e6  # only settled steps were timed


SETTLING_RULE = StopRule(max_seconds=10.0, min_seconds=2.0, min_steps=20)


def timed_after_settling(step_ms_at, rule=SETTLING_RULE, paused=None):
    """run_mode as synthetic mode runs it: compile step, fixed warm-up, settling, `keep_warmup`."""
    clock = FakeClock()
    settled = Settled(clock, max_seconds=30.0)

    def step(batch):
        clock.ns += int(step_ms_at(clock.ns / 1e9) * 1e6)

    run = run_mode("synthetic", lambda: 1, step, rule, clock_ns=clock, warmup_until=settled,
                   first_step_is_compile=True, keep_warmup=lambda: settled.settled_since_ns, paused_ns=paused)
    return run, settled, clock.ns / 1e9


def test_a_step_steady_through_its_settling_windows_is_timed_from_the_first_of_them():
    run, settled, seconds = timed_after_settling(lambda t: 10.0)
    assert settled.steady and run.stop_reason == "stable"
    assert run.warmup_steps == 1 + 5  # the compile step and the fixed warm-up
    assert len(run.compute_ns) == pytest.approx(200, abs=3)  # the four 0.5-s windows' steps: stable at once
    assert (run.end_ns - run.start_ns) / 1e9 == pytest.approx(2.0, abs=0.05)
    assert seconds == pytest.approx(0.06 + 2.0, abs=0.05)  # compile and fixed steps, the windows: not + 2.0 afresh


@pytest.mark.parametrize("step_ms_at", [
    lambda t: 12.0 if t < 1.3 else 10.0,  # rose within the windows (settled: not by 5% over two windows)
    lambda t: max(24.0, 48.0 - 2.4 * t),  # sped up for seconds: settled late
])
def test_a_step_that_rose_and_then_settled_is_timed_from_the_three_windows_that_settled_it(step_ms_at):
    run, settled, _ = timed_after_settling(step_ms_at)
    assert not settled.steady and len(settled.rates) > 3
    since = settled.settled_since_ns
    assert since == settled.window_starts_ns[-4] and run.start_ns == since  # 0.5-s windows: 1.5 s back
    tail = settled.rates[-4:]
    assert tail[-1] <= tail[0] * 1.05
    assert max(run.compute_ns) / 1e6 <= 1000 / min(tail) * 1.05  # none of the rising steps before them
    assert run.stop_reason == "stable"


def test_a_step_that_slowed_in_its_last_window_keeps_its_windows_and_the_stable_rule_judges_them():
    run, settled, _ = timed_after_settling(lambda t: 10.0 if t < 1.2 else 11.0)
    assert not settled.steady and settled.settled_since_ns == settled.window_starts_ns[0]
    assert run.start_ns == settled.window_starts_ns[0]
    assert (run.end_ns - run.start_ns) / 1e9 >= 2.0  # SETTLING_RULE's min_seconds, from the windows' start


def test_a_warm_up_out_of_time_is_timed_afresh():
    clock = FakeClock()
    settled = Settled(clock, max_seconds=2.0)

    def step(batch):
        clock.ns += int(max(5.0, 40.0 - 10.0 * clock.ns / 1e9) * 1e6)  # still rising at the cap

    run = run_mode("synthetic", lambda: 1, step, SETTLING_RULE, clock_ns=clock, warmup_until=settled,
                   first_step_is_compile=True, keep_warmup=lambda: settled.settled_since_ns)
    assert settled.gave_up and settled.settled_since_ns is None
    assert run.start_ns >= settled._start_ns + 2_000_000_000  # after the warm-up's cap


def test_a_pause_in_the_settling_windows_keeps_them_out():
    # pipediag run: the script's own work between two steps fell in the warm-up's windows.
    pauses = {"ns": 0}

    def paused():
        return pauses["ns"]

    clock_steps = {"n": 0}

    def step_ms_at(t):
        clock_steps["n"] += 1
        if clock_steps["n"] == 50:
            pauses["ns"] += 1_000_000  # a 1-ms pause, counted by the step's caller
        return 10.0

    run, settled, _ = timed_after_settling(step_ms_at, paused=paused)
    assert settled.steady and (run.end_ns - run.start_ns) / 1e9 >= 2.0
    assert run.warmup_steps > 6


def test_a_short_mode_cap_shortens_the_windows_and_a_steady_step_is_not_called_rising():
    clock = FakeClock()
    settled = Settled(clock, max_seconds=1.5)
    assert settled.window_s == pytest.approx(1.5 / 8)
    while not settled():
        clock.ns += 10_000_000
    assert not settled.gave_up and clock.ns / 1e9 < 0.7
    steady_out_of_time = Settled(FakeClock(), max_seconds=0.2, window_s=0.75)
    c = steady_out_of_time._clock_ns
    while not steady_out_of_time():
        c.ns += 10_000_000
    assert steady_out_of_time.gave_up and steady_out_of_time.note() is None


@pytest.mark.parametrize("mode_cap_s, window_s, long_window_s, settled_after_s", [
    (10.0, 0.5, 0.75, 2.0),  # the default cap: four 0.5-s windows, a 1.5-s look back, as before
    (6.0, 0.5, 0.75, 2.0),  # the shortest cap where nothing changes
    (3.0, 0.375, 0.375, 1.125),  # --quick: three 0.375-s windows (2.0 s sized on the warm-up's 4.5-s cap)
    (1.0, 0.125, 0.125, 0.375),
])
def test_the_settling_windows_are_sized_on_the_modes_cap(mode_cap_s, window_s, long_window_s, settled_after_s):
    # The windows become the start of the mode's timed window: an eighth of the mode's cap at
    # most, while the warm-up itself may run to 1.5x that cap.
    clock = FakeClock()
    settled = settling_warmup(clock, mode_cap_s)
    assert settled.window_s == pytest.approx(window_s)
    assert settled._long_window_ns == int(long_window_s * 1e9)
    assert settled._max_ns == int(1.5 * mode_cap_s * 1e9)
    while not settled():
        clock.ns += 1_000_000  # a steady 1-ms step
    assert not settled.gave_up and settled.steady
    assert clock.ns / 1e9 == pytest.approx(settled_after_s, abs=0.01)
    assert settled.settled_since_ns == settled.window_starts_ns[0]  # all of them become timed steps


def test_an_interrupt_during_the_settling_warm_up_keeps_its_steps_as_the_timings():
    clock = FakeClock()
    settled = Settled(clock, max_seconds=30.0)
    calls = {"n": 0}

    def step(batch):
        calls["n"] += 1
        clock.ns += int(max(10.0, 40.0 - 3.0 * clock.ns / 1e9) * 1e6)
        if calls["n"] == 60:
            raise KeyboardInterrupt

    run = run_mode("synthetic", lambda: 1, step, StopRule(max_seconds=3.0, min_seconds=1.0, min_steps=10),
                   clock_ns=clock, warmup_until=settled, first_step_is_compile=True)
    assert run.stop_reason == "interrupted"
    assert len(run.compute_ns) == 60 - 1 - 5 - 1  # less the compile step, the fixed warm-up, the interrupted one
    assert any("interrupted during warm-up" in n for n in run.notes)


# -- CacheFilled: one full pass of a pipeline that caches ------------------------------------------
def test_cache_filled_waits_for_one_full_pass():
    from pipediag.modes.warmup import CacheFilled

    clock, taken = FakeClock(), [3]  # the feed had given 3 batches when the warm-up asked first
    filled = CacheFilled(lambda: taken[0], pass_batches=50, clock_ns=clock, max_seconds=30)
    while not filled():
        clock.advance(10)
        taken[0] += 1
    assert filled.filled and taken[0] == 51 and filled.gave_up_projected_s is None
    assert abs(filled.seconds - 0.48) < 0.02


def test_cache_filled_gives_up_at_once_on_a_pass_longer_than_the_cap():
    from pipediag.modes.warmup import CacheFilled

    clock, taken = FakeClock(), [0]
    filled = CacheFilled(lambda: taken[0], pass_batches=10_000, clock_ns=clock, max_seconds=30)
    while not filled():
        clock.advance(10)  # 100 batches/s: the pass would take 100 s
        taken[0] += 1
    assert not filled.filled
    assert filled.seconds < 2.1  # projected after 2 s, not waited to the cap
    assert 95 < filled.gave_up_projected_s < 105
