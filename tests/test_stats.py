import random

import pytest

from pipediag import stats


def test_percentile_matches_numpy_linear_method():
    values = [5, 1, 4, 2, 3]
    assert stats.percentile(values, 50) == 3
    assert stats.percentile(values, 90) == pytest.approx(4.6)
    assert stats.median([1, 2, 3, 4]) == 2.5


def test_percentile_of_nothing_raises():
    with pytest.raises(ValueError):
        stats.percentile([], 50)


def test_median_ci_needs_six_values_and_contains_the_median():
    assert stats.median_ci([1, 2, 3, 4, 5]) is None
    values = list(range(1, 101))
    lo, hi = stats.median_ci(values)
    assert lo < stats.median(values) < hi
    assert hi - lo < 25  # ~ ±1 sqrt(n) ranks


def test_median_ci_covers_true_median_about_95_percent_of_the_time():
    rng = random.Random(7)
    hits = 0
    trials = 400
    for _ in range(trials):
        values = [rng.expovariate(1.0) for _ in range(60)]  # skewed, like step times
        lo, hi = stats.median_ci(values)
        hits += lo <= 0.6931 <= hi  # ln 2: the exponential's median
    assert 0.90 <= hits / trials <= 0.995


def test_batch_means_ci_widens_for_autocorrelated_values():
    rng = random.Random(3)
    independent = [10 + rng.gauss(0, 1) for _ in range(200)]
    drifting = [10 + (2 if (i // 20) % 2 else -2) + rng.gauss(0, 1) for i in range(200)]
    w_ind = stats.relative_half_width(stats.batch_means_ci(independent), 10)
    w_drift = stats.relative_half_width(stats.batch_means_ci(drifting), 10)
    assert w_drift > 2 * w_ind


def test_batch_means_ci_none_for_few_values():
    assert stats.batch_means_ci([1.0, 2.0, 3.0, 4.0, 5.0]) is None


@pytest.mark.parametrize("p, dof, table", [
    (0.975, 1, 12.706), (0.975, 3, 3.182), (0.975, 9, 2.262), (0.975, 30, 2.042), (0.995, 10, 3.169),
    (0.9995, 5, 6.869), (0.95, 20, 1.725), (0.975, 1e6, 1.960),
])
def test_t_quantile_matches_printed_tables(p, dof, table):
    assert stats.t_quantile(p, dof) == pytest.approx(table, abs=1e-3)
    assert stats.t_quantile(1 - p, dof) == pytest.approx(-table, abs=1e-3)


def test_t_cdf_inverts_the_quantile_also_for_fractional_dof():
    for dof in (1.5, 2.7, 12.3):
        for p in (0.6, 0.9, 0.99583):
            assert stats.t_cdf(stats.t_quantile(p, dof), dof) == pytest.approx(p, abs=1e-9)
    assert stats.t_cdf(0.0, 4) == 0.5
    with pytest.raises(ValueError):
        stats.t_quantile(1.0, 3)


def test_batch_means_ci_contains_the_mean_of_all_values():
    # 25 values in 10 batches of 2 leave 5 out; a large last value moves the full mean only.
    values = [1.0] * 24 + [100.0]
    lo, hi = stats.batch_means_ci(values)
    assert lo <= stats.mean(values) <= hi


# Values computed with pipediag's own implementations before stats.py moved to numpy/scipy
# (sorted-list interpolation, a Numerical Recipes continued fraction for the incomplete beta and a
# bisection for the quantile): the libraries must give the same numbers.
_OLD_VALUES = [7, 3, 11, 2, 2, 9, 100, 4, 5]


@pytest.mark.parametrize("q, old", [
    (0, 2.0), (10, 2.0), (33.3, 3.6639999999999997), (50, 5.0), (90, 28.800000000000015), (99, 92.88),
    (100, 100.0),
])
def test_percentile_equals_the_former_implementation(q, old):
    assert stats.percentile(_OLD_VALUES, q) == pytest.approx(old, rel=1e-12)
    assert isinstance(stats.percentile(_OLD_VALUES, q), float)


def test_percentile_of_large_integer_nanoseconds_equals_the_former_implementation():
    assert stats.percentile([123456789012, 123456000000, 987654321], 75) == pytest.approx(123456394506.0, rel=1e-12)


@pytest.mark.parametrize("t, dof, old", [
    (0.3, 1, 0.5927735790777422), (-2.1, 3, 0.0632826012748423), (1.7, 4.5, 0.9218230439320512),
    (2.5, 17.25, 0.9886098183186273), (0.0, 2, 0.5), (4.0, 120, 0.9999450280786879),
])
def test_t_cdf_equals_the_former_implementation(t, dof, old):
    assert stats.t_cdf(t, dof) == pytest.approx(old, abs=1e-12)


@pytest.mark.parametrize("p, dof, old", [
    (0.975, 2, 4.302652729749752), (0.95, 7.3, 1.882930017955914), (0.995, 3, 5.840909309734343),
    (0.025, 12.5, -2.1691859427128293), (0.9, 100, 1.2900747613462045), (0.5, 4, 0.0),
])
def test_t_quantile_equals_the_former_implementation(p, dof, old):
    assert stats.t_quantile(p, dof) == pytest.approx(old, rel=1e-9, abs=1e-12)


def test_t_functions_reject_impossible_arguments():
    with pytest.raises(ValueError):
        stats.t_cdf(1.0, 0)
    with pytest.raises(ValueError):
        stats.t_quantile(0.975, -1)
    with pytest.raises(ValueError):
        stats.t_quantile(0.0, 3)
