"""Two speeds in one window (analysis.regimes), on scripted step times."""

import random

import pytest

from pipediag.analysis.regimes import MIN_BLOCK_STEPS, MIN_BLOCKS, find_regimes

MS = 1_000_000


def noisy(ms, n, rel=0.03, seed=0):
    rng = random.Random(seed)
    return [int(ms * MS * (1 + rng.uniform(-rel, rel))) for _ in range(n)]


def test_a_step_that_switches_between_two_speeds_in_stretches_has_two_regimes():
    # real/kerasio_timeseries, 2026-12-04 19:38: 22.7-ms and 36.4-ms stretches, 38% fast.
    # Stretches of whole blocks (12 steps each here); a block across a switch counts whole, as
    # the speed of most of its steps.
    window = noisy(22.7, 48, seed=1) + noisy(36.4, 72, seed=2) + noisy(22.7, 48, seed=3) + noisy(36.4, 72, seed=4)
    r = find_regimes(window)
    assert r is not None
    assert r.fast_ms == pytest.approx(22.7, rel=0.03) and r.slow_ms == pytest.approx(36.4, rel=0.03)
    assert r.fast_share == pytest.approx(96 / 240) and r.median_in_slow
    assert r.stretches == 4
    assert r.fast_per_sec == pytest.approx(1000 / 22.7, rel=0.03)
    assert r.text().endswith("for 40% of its steps and 36.44 ms (1.61x slower) for the rest, in 4 stretches")


def test_one_speed_with_noise_has_none():
    assert find_regimes(noisy(10.0, 400, rel=0.2)) is None


def test_single_slow_steps_do_not_make_a_slow_stretch():
    # A garbage-collection pause every 10 steps: each block's median stays at the step's speed.
    window = [40 * MS if i % 10 == 0 else t for i, t in enumerate(noisy(10.0, 400))]
    assert find_regimes(window) is None


def test_drift_is_not_two_speeds():
    # A step speeding up steadily from 30 to 20 ms: the blocks spread evenly, no clean split.
    n = 300
    assert find_regimes([int((30 - 10 * i / n) * MS) for i in range(n)]) is None


def test_two_speeds_closer_than_the_line_are_not_named():
    window = noisy(20.0, 100, rel=0.005, seed=5) + noisy(22.0, 100, rel=0.005, seed=6)  # 1.10x apart
    assert find_regimes(window) is None


def test_a_window_too_short_to_tell_has_none():
    short = MIN_BLOCK_STEPS * MIN_BLOCKS - 1
    assert find_regimes(noisy(20.0, short // 2) + noisy(36.0, short - short // 2)) is None


def test_identical_times_are_finitely_separated():
    # A fake clock: every step exactly 20 or 40 ms. Two speeds, and a number JSON can hold.
    r = find_regimes([20 * MS] * 60 + [40 * MS] * 60)
    assert r is not None and r.separation < float("inf") and not r.median_in_slow
