"""The knee and the OOM edge on plain numbers."""

import math

import pytest

from pipediag.analysis.sweep import KNEE_GAIN_PER_DOUBLING, Rate, find_knee, oom_edge, per_doubling


def rates(pairs, rel_ci=0.02):
    return [Rate(b, r, (r * (1 - rel_ci), r * (1 + rel_ci))) for b, r in pairs]


def test_gain_is_per_doubling_so_uneven_steps_compare():
    # 16 -> 64 is two doublings: 4x the throughput is 2x per doubling.
    g = per_doubling(Rate(16, 100.0, None), Rate(64, 400.0, None))
    assert math.isclose(g.per_doubling, 2.0) and g.low is None


def test_knee_is_where_every_later_doubling_gains_less_than_the_line():
    # Linear growth (overhead-bound) up to 256, then flat (the GPU is saturated).
    k = find_knee(rates([(32, 1000), (64, 2000), (128, 4000), (256, 7900), (512, 8300), (1024, 8400)]))
    assert k.batch_size == 256 and k.examples_per_sec == 7900
    assert "up to 256 each doubling gained >= 1.10x" in k.reason
    assert not k.uncertain


@pytest.mark.parametrize("gain, knee", [(KNEE_GAIN_PER_DOUBLING + 0.01, None), (KNEE_GAIN_PER_DOUBLING - 0.01, 64)])
def test_the_line_on_both_sides(gain, knee):
    k = find_knee(rates([(32, 1000), (64, 2000), (128, 2000 * gain)], rel_ci=0.0))
    assert k.batch_size == knee


def test_one_flat_step_does_not_hide_later_growth():
    k = find_knee(rates([(32, 1000), (64, 1050), (128, 2000), (256, 2050)]))
    assert k.batch_size == 128  # not 32: the 64 -> 128 step still doubled


def test_still_growing_at_the_largest_size_means_no_knee():
    k = find_knee(rates([(32, 1000), (64, 1900), (128, 3600)]))
    assert k.batch_size is None and "still grows at the largest batch size that ran (128" in k.reason


def test_flat_from_the_start_puts_the_knee_at_the_smallest_size():
    k = find_knee(rates([(32, 1000), (64, 1020), (128, 1030)]))
    assert k.batch_size == 32 and "already saturated at 32" in k.reason


def test_a_gain_whose_interval_straddles_the_line_makes_the_knee_uncertain():
    k = find_knee(rates([(32, 1000), (64, 2000), (128, 2150)], rel_ci=0.10))
    assert k.batch_size == 64 and k.uncertain


def test_too_few_points():
    assert find_knee(rates([(32, 1000)])).batch_size is None


def test_oom_edge_between_the_largest_fit_and_the_smallest_oom():
    e = oom_edge([16, 32, 64], [128], {64: 3 * 2**30}, "a 4096 MiB card simulated on 140.0 GiB")
    assert (e.largest_fitting, e.smallest_oom) == (64, 128)
    assert e.text == "fits at 64 (peak 3.00 GiB), runs out of memory at 128 (a 4096 MiB card simulated on 140.0 GiB)"


def test_no_oom_and_oom_at_the_smallest():
    assert oom_edge([16, 32], [], {32: 2**30}).text == "no batch size ran out of memory; the largest, 32, ran, peaking at 1.00 GiB"
    assert oom_edge([], [16], {}).text == "even the smallest batch size, 16, ran out of memory"
