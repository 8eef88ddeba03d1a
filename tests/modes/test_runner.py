"""The mode runner with a fake clock: no TensorFlow, no sleeping."""

import pytest

from pipediag.errors import UserCodeError
from pipediag.modes.runner import is_stable, run_mode
from pipediag.records.run import StopRule
from tests.clocks import FakeClock


def feeder(clock, wait_ms):
    def next_batch():
        clock.advance(wait_ms() if callable(wait_ms) else wait_ms)
        return "batch"

    return next_batch


def stepper(clock, ms):
    def step(batch):
        clock.advance(ms() if callable(ms) else ms)

    return step


def test_constant_steps_stop_as_stable_with_warmup_kept_apart():
    clock = FakeClock()
    rule = StopRule(max_seconds=10, min_seconds=0.1, min_steps=10, warmup_steps=3)
    run = run_mode("pipeline", feeder(clock, 2), stepper(clock, 8), rule, clock_ns=clock, first_step_is_compile=True)
    assert run.stop_reason == "stable"
    assert run.first_step_ns == 10_000_000
    assert run.warmup_steps == 4  # the compile step plus three
    assert set(run.wait_ns) == {2_000_000} and set(run.compute_ns) == {8_000_000}
    assert run.steps >= 10 and run.step_ns[0] == 10_000_000


def test_noisy_steps_run_to_the_time_cap():
    clock = FakeClock()
    pattern = iter([1, 30] * 100_000)
    rule = StopRule(max_seconds=1.0, min_seconds=0.1, min_steps=10, warmup_steps=0)
    run = run_mode("pipeline", feeder(clock, 0), stepper(clock, lambda: next(pattern)), rule, clock_ns=clock)
    assert run.stop_reason == "time_cap"
    assert (run.end_ns - run.start_ns) / 1e9 >= 1.0


def test_a_soft_cap_stops_a_fast_mode_and_lets_a_slow_one_reach_its_steps():
    """--quick's soft cap: noisy 1/30-ms steps stop at it (1 s), not at the 10-s cap; 400-ms steps
    run past it until they have min_steps (4), well before the 10-s cap."""
    rule = StopRule(max_seconds=10.0, min_seconds=0.1, min_steps=4, warmup_steps=0, soft_max_seconds=1.0)
    clock = FakeClock()
    pattern = iter([1, 30] * 100_000)
    fast = run_mode("pipeline", feeder(clock, 0), stepper(clock, lambda: next(pattern)), rule, clock_ns=clock)
    assert fast.stop_reason == "time_cap" and 1.0 <= (fast.end_ns - fast.start_ns) / 1e9 < 1.1
    clock = FakeClock()
    slow = run_mode("pipeline", feeder(clock, 0), stepper(clock, 400), rule, clock_ns=clock)
    # 4 timed steps (the first, a new input shape, is held apart): 2 s, past the soft cap
    assert slow.steps == 4 and 1.6 <= (slow.end_ns - slow.start_ns) / 1e9 <= 2.0, slow.stop_reason


def test_a_pause_outside_the_steps_is_kept_out_of_step_times_and_the_time_cap():
    """A script's loop as the step (run.swap): every 10th step is followed by 3 s of validation
    that is no step (Step.paused_ns). The steps read 10 ms, and the 1-s cap counts step time only,
    so the window still has its ~100 steps; the note says how long the loop was away."""
    clock = FakeClock()
    paused = {"ns": 0, "steps": 0}

    def step(batch):
        clock.advance(10)
        paused["steps"] += 1
        if paused["steps"] % 10 == 0:  # the fit's validation after the step, before the next request
            clock.advance(3000)
            paused["ns"] += 3_000_000_000

    rule = StopRule(max_seconds=1.0, min_seconds=10.0, min_steps=10, warmup_steps=2)
    run = run_mode("synthetic", feeder(clock, 0), step, rule, clock_ns=clock, paused_ns=lambda: paused["ns"])
    assert run.stop_reason == "time_cap"
    assert set(run.compute_ns) == {10_000_000}
    assert 95 <= run.steps <= 105
    assert any("s of the window were spent outside any step" in n for n in run.notes), run.notes
    # without paused_ns (diagnose's own steps) every moment of a step is the step
    clock = FakeClock()
    paused.update(ns=0, steps=0)
    plain = run_mode("synthetic", feeder(clock, 0), step, rule, clock_ns=clock)
    assert max(plain.compute_ns) >= 3_000_000_000 and plain.steps < 10


def test_input_only_mode_has_no_step_time():
    clock = FakeClock()
    rule = StopRule(max_seconds=5, min_seconds=0.1, min_steps=10, warmup_steps=1)
    run = run_mode("input_only", feeder(clock, 5), None, rule, clock_ns=clock)
    assert set(run.compute_ns) == {0}
    assert run.stop_reason == "stable"


def test_out_of_memory_in_the_step_ends_the_mode_without_raising():
    class ResourceExhaustedError(Exception):
        pass

    clock = FakeClock()

    def step(batch):
        raise ResourceExhaustedError("OOM when allocating tensor with shape[1048576,65536]")

    run = run_mode("synthetic", feeder(clock, 0), step, StopRule(), clock_ns=clock, first_step_is_compile=True)
    assert run.stop_reason == "out_of_memory"
    assert run.error.type == "ResourceExhaustedError"
    assert "OOM when allocating" in run.error.message


def test_other_step_errors_are_the_users_code():
    clock = FakeClock()

    def step(batch):
        raise KeyError("label")

    with pytest.raises(UserCodeError) as info:
        run_mode("synthetic", feeder(clock, 0), step, StopRule(), clock_ns=clock)
    assert info.value.where == "step"


def test_pipeline_errors_are_the_users_code():
    clock = FakeClock()

    def next_batch():
        raise OSError("disk gone")

    with pytest.raises(UserCodeError) as info:
        run_mode("pipeline", next_batch, None, StopRule(), clock_ns=clock)
    assert info.value.where == "pipeline"


def test_ctrl_c_returns_what_was_measured():
    clock = FakeClock()
    calls = {"n": 0}

    def step(batch):
        calls["n"] += 1
        clock.advance(5)
        if calls["n"] == 20:
            raise KeyboardInterrupt

    run = run_mode("pipeline", feeder(clock, 1), step, StopRule(warmup_steps=2), clock_ns=clock)
    assert run.stop_reason == "interrupted"
    assert run.steps == 17  # 2 warm-up, 17 timed, the 20th interrupted


def test_warmup_until_waits_for_a_condition():
    clock = FakeClock()
    seen = {"n": 0}

    def next_batch():
        seen["n"] += 1
        clock.advance(1)
        return seen["n"]

    rule = StopRule(max_seconds=1, min_seconds=0.01, min_steps=5, warmup_steps=1)
    run = run_mode("tuned", next_batch, stepper(clock, 1), rule, clock_ns=clock, warmup_until=lambda: seen["n"] >= 50)
    assert run.warmup_steps == 50


def test_is_stable_needs_both_median_and_mean_tight():
    from pipediag import stats

    assert is_stable([10] * 50, 0.05, 0.10)
    # Median pinned at 10, but slow steps come in a burst early on: the mean is not settled.
    bursty = ([10] * 8 + [300] * 2) * 5 + ([10] * 8 + [12] * 2) * 5
    assert stats.relative_half_width(stats.median_ci(bursty), stats.median(bursty)) == 0
    assert not is_stable(bursty, 0.05, 0.10)


def test_a_run_read_only_for_its_rate_is_stable_once_the_mean_is_pinned():
    """Steps alternating between a ready batch (1 ms) and a wait (30 ms): the median's interval
    spans both kinds however long the run, the mean is pinned. A rate_only rule stops on the mean
    (within the median's own tolerance, 5%); a mean still swinging is no more stable for it."""
    from pipediag import stats

    alternating = [1, 30] * 40
    assert stats.relative_half_width(stats.median_ci(alternating), stats.median(alternating)) > 0.05
    assert not is_stable(alternating, 0.05, 0.10)
    assert is_stable(alternating, 0.05, 0.10, rate_only=True)
    bursty = ([10] * 8 + [300] * 2) * 5 + ([10] * 8 + [12] * 2) * 5
    assert not is_stable(bursty, 0.05, 0.10, rate_only=True)
    clock = FakeClock()
    pattern = iter([1, 30] * 100_000)
    rule = StopRule(max_seconds=1.0, min_seconds=0.1, min_steps=10, warmup_steps=0, rate_only=True)
    run = run_mode("control", feeder(clock, 0), stepper(clock, lambda: next(pattern)), rule, clock_ns=clock)
    assert run.stop_reason == "stable" and (run.end_ns - run.start_ns) / 1e9 < 0.2  # not the 1-s cap


def test_stop_rule_rejects_nonsense():
    with pytest.raises(ValueError):
        StopRule(max_seconds=0)


# -- a step with one in flight (JAX, PyTorch: dispatch returns before the device is done) -------

class FakeDevice:
    """A device on the fake clock: a dispatch costs the host `host_ms`; the work then takes
    `work_ms` on the device, after any work queued before it; finish() waits until it is done."""

    def __init__(self, clock, work_ms, host_ms=0.5, fail_at=None, ask_ms=0.0):
        self.clock, self.work_ns, self.host_ms, self.ask_ns = clock, int(work_ms * 1e6), host_ms, int(ask_ms * 1e6)
        self.busy_until_ns = 0
        self.dispatched = 0
        self.fail_at = fail_at

    def dispatch(self, batch):
        self.clock.advance(self.host_ms)
        self.busy_until_ns = max(self.clock.ns, self.busy_until_ns) + self.work_ns
        self.dispatched += 1
        done_ns, n = self.busy_until_ns, self.dispatched

        def finish():
            self.clock.ns = max(self.clock.ns, done_ns) + self.ask_ns  # asking costs, even when done
            if n == self.fail_at:
                raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 64.00GiB")

        return finish


RULE = StopRule(max_seconds=2, min_seconds=0.2, min_steps=20, warmup_steps=2)


def test_synthetic_waits_for_the_device_and_that_is_the_hideable_work():
    clock = FakeClock()
    device = FakeDevice(clock, work_ms=8)
    run = run_mode("synthetic", feeder(clock, 0), None, RULE, clock_ns=clock, dispatch=device.dispatch,
                   first_step_is_compile=True)
    assert run.overlapped and set(run.block_ns) == {8_000_000} and set(run.wait_ns) == {0}
    assert set(run.step_ns) == {8_500_000}  # work plus the host's dispatch
    assert run.first_step_ns == 8_500_000  # the compile step is waited for, not left in flight
    assert clock.ns >= device.busy_until_ns  # the last step finished inside the mode


def test_a_fetch_shorter_than_the_device_work_is_hidden():
    clock = FakeClock()
    device = FakeDevice(clock, work_ms=8)
    run = run_mode("pipeline", feeder(clock, 2), None, RULE, clock_ns=clock, dispatch=device.dispatch,
                   hideable_ns=8_000_000)
    assert set(run.fetch_ns) == {2_000_000} and set(run.block_ns) == {6_000_000}
    assert set(run.wait_ns) == {0}  # the device was busy through every fetch
    assert set(run.step_ns) == {8_500_000}  # as fast as with free input
    # Timed synchronously, the same loop waits 2 ms of every 10.5.
    sync = run_mode("pipeline", feeder(clock, 2), lambda b: device.dispatch(b)(), RULE, clock_ns=clock)
    assert set(sync.wait_ns) == {2_000_000} and set(sync.step_ns) == {10_500_000}


def test_a_fetch_longer_than_the_device_work_exposes_the_rest():
    clock = FakeClock()
    device = FakeDevice(clock, work_ms=8)
    run = run_mode("pipeline", feeder(clock, 12), None, RULE, clock_ns=clock, dispatch=device.dispatch,
                   hideable_ns=8_000_000)
    assert set(run.block_ns) == {0}
    assert set(run.wait_ns) == {4_000_000}  # 12 ms fetch, 8 of them behind the device's work
    assert set(run.step_ns) == {12_500_000}
    # Without the synthetic figure, the whole fetch counts: an upper bound, never less.
    bound = run_mode("pipeline", feeder(clock, 12), None, RULE, clock_ns=clock, dispatch=device.dispatch)
    assert set(bound.wait_ns) == {12_000_000} and bound.hideable_ns is None


def test_the_cost_of_asking_a_finished_step_does_not_hide_a_long_fetch():
    # Seen on the H200: a tiny JAX step, a 37 ms fetch, and 77 µs to ask for the finished result.
    # An earlier rule ("still waiting after the fetch = the device was busy") called that 0 wait.
    clock = FakeClock()
    device = FakeDevice(clock, work_ms=0.01, host_ms=0.1, ask_ms=0.077)
    synthetic = run_mode("synthetic", feeder(clock, 0), None, RULE, clock_ns=clock, dispatch=device.dispatch)
    hideable = sorted(synthetic.block_ns)[len(synthetic.block_ns) // 2]
    assert 77_000 <= hideable <= 87_000  # the device's 10 µs plus the asking
    run = run_mode("pipeline", feeder(clock, 37), None, RULE, clock_ns=clock, dispatch=device.dispatch,
                   hideable_ns=hideable)
    assert set(run.block_ns) == {77_000}
    assert set(run.wait_ns) == {37_000_000 - hideable}
    assert sum(run.wait_ns) / sum(run.step_ns) > 0.99


def test_a_host_step_hides_nothing():
    """A NumPy step is done when it returns: no device work to wait for, so nothing to hide behind."""
    clock = FakeClock()

    def dispatch(batch):
        clock.advance(8)
        return lambda: None

    synthetic = run_mode("synthetic", feeder(clock, 0), None, RULE, clock_ns=clock, dispatch=dispatch)
    assert set(synthetic.block_ns) == {0}
    run = run_mode("pipeline", feeder(clock, 3), None, RULE, clock_ns=clock, dispatch=dispatch,
                   hideable_ns=int(sorted(synthetic.block_ns)[0]))
    assert set(run.wait_ns) == {3_000_000} and set(run.step_ns) == {11_000_000}


def test_out_of_memory_seen_when_waiting_for_a_step_in_flight_ends_the_mode():
    clock = FakeClock()
    device = FakeDevice(clock, work_ms=8, fail_at=5)
    run = run_mode("synthetic", feeder(clock, 0), None, RULE, clock_ns=clock, dispatch=device.dispatch)
    assert run.stop_reason == "out_of_memory" and "RESOURCE_EXHAUSTED" in run.error.message


def test_an_overlapped_run_round_trips_through_json():
    from pipediag.records.run import ModeRun

    clock = FakeClock()
    device = FakeDevice(clock, work_ms=8)
    run = run_mode("pipeline", feeder(clock, 2), None, RULE, clock_ns=clock, dispatch=device.dispatch,
                   hideable_ns=8_000_000)
    assert ModeRun.from_dict(run.to_dict()) == run
    with pytest.raises(ValueError, match="not both"):
        run_mode("x", feeder(clock, 0), lambda b: None, RULE, clock_ns=clock, dispatch=device.dispatch)


def test_a_mode_measured_again_on_a_threshold_runs_twice_as_long_to_its_end():
    from pipediag.modes.runner import longer
    from pipediag.records.run import StopRule

    rule = longer(StopRule(max_seconds=6.0, min_seconds=2.0, min_steps=20))
    assert (rule.max_seconds, rule.min_seconds, rule.min_steps, rule.decide_min_steps) == (12.0, 12.0, 40, 40)


def test_a_decided_condition_stops_the_mode_before_min_seconds():
    clock = FakeClock()
    asked = []

    def decided(wait, compute):
        asked.append((len(wait), clock.ns))
        return len(wait) >= 60

    rule = StopRule(max_seconds=10, min_seconds=2.0, min_steps=20, warmup_steps=0, decide_min_seconds=0.75)
    pattern = iter([1, 30] * 100_000)  # never stable: only the decision can stop it early
    run = run_mode("pipeline", feeder(clock, 0), stepper(clock, lambda: next(pattern)), rule, clock_ns=clock,
                   decided=decided)
    assert run.stop_reason == "decided"
    assert asked[0][1] >= 0.75e9  # not asked before decide_min_seconds
    assert (run.end_ns - run.start_ns) / 1e9 < 2.0


def test_without_a_decision_the_stable_rule_keeps_its_min_seconds():
    clock = FakeClock()
    rule = StopRule(max_seconds=10, min_seconds=2.0, min_steps=20, warmup_steps=0)
    run = run_mode("pipeline", feeder(clock, 1), stepper(clock, 9), rule, clock_ns=clock, decided=lambda w, c: False)
    assert run.stop_reason == "stable"
    assert (run.end_ns - run.start_ns) / 1e9 >= 2.0


class Asked:
    """A `decided` condition that answers `answer` and records the step counts it was asked at."""

    def __init__(self, answer: bool):
        self.answer, self.at = answer, []

    def __call__(self, wait, compute):
        self.at.append(len(wait))
        return self.answer


SLOW_RULE = StopRule(max_seconds=30, min_seconds=2.0, min_steps=20, warmup_steps=0, decide_min_seconds=0.75,
                     decide_min_steps=10)


def test_a_slow_pipeline_is_asked_for_its_decision_from_decide_min_steps_not_min_steps():
    # real/tf_csv: 0.43-s batches, 20 steps were 9 s of a mode whose reading was far from its line.
    clock, decided = FakeClock(), Asked(True)
    run = run_mode("pipeline", feeder(clock, 400), stepper(clock, 30), SLOW_RULE, clock_ns=clock, decided=decided)
    assert run.stop_reason == "decided" and decided.at == [10] and run.steps == 10


def test_the_stable_rule_still_needs_min_steps_when_a_decision_is_asked_earlier():
    # Steady 0.43-s steps, stable from the start: the stable rule may stop only at min_steps.
    clock, decided = FakeClock(), Asked(False)
    run = run_mode("pipeline", feeder(clock, 400), stepper(clock, 30), SLOW_RULE, clock_ns=clock, decided=decided)
    assert run.stop_reason == "stable" and run.steps == 20
    assert decided.at == [10, 12, 14, 16, 18]  # asked as the count grows by an eighth; stable at 20


def test_without_a_decision_min_steps_alone_sets_the_first_check():
    clock = FakeClock()
    run = run_mode("input_only", feeder(clock, 430), None, SLOW_RULE, clock_ns=clock)
    assert run.stop_reason == "stable" and run.steps == 20
