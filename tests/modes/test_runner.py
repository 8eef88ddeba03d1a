"""The mode runner with a fake clock: no TensorFlow, no sleeping."""

import pytest

from pipediag.errors import UserCodeError
from pipediag.modes.runner import StopRule, is_stable, run_mode


class FakeClock:
    def __init__(self):
        self.ns = 0

    def __call__(self):
        return self.ns

    def advance(self, ms):
        self.ns += int(ms * 1e6)


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


def test_stop_rule_rejects_nonsense():
    with pytest.raises(ValueError):
        StopRule(max_seconds=0)
