"""Statistics on timings: medians, percentiles, confidence intervals.

Used by the modes (to decide when a timing is stable) and by the analysis. Inputs are plain
sequences of numbers; nothing here knows about TensorFlow or samples. The distributions come from
numpy and scipy; what is pipediag's own is which interval each question gets (order statistics for
the median, batch means for autocorrelated step times, the small-sample t table).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

Z_95 = 1.959964


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100] (numpy's "linear" method, its default)."""
    if len(values) == 0:
        raise ValueError("percentile of no values")
    return float(np.percentile(np.asarray(values, dtype=float), q, method="linear"))


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


def median_ci(values: Sequence[float], z: float = Z_95) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the median, from order statistics.

    The ranks n/2 ± z·√n/2 bound the median with the binomial's normal approximation; it needs
    no assumption about the shape of the step-time distribution (which is skewed and often
    bimodal when a prefetch buffer drains). None below 6 values, where no such interval exists.
    """
    n = len(values)
    if n < 6:
        return None
    ordered = sorted(values)
    half = z * math.sqrt(n) / 2.0
    lo = max(0, math.floor(n / 2.0 - half) - 1)
    hi = min(n - 1, math.ceil(n / 2.0 + half) - 1)
    return ordered[lo], ordered[hi]


def relative_half_width(interval: tuple[float, float] | None, center: float) -> float | None:
    if interval is None or center <= 0:
        return None
    return (interval[1] - interval[0]) / 2.0 / center


def batch_means_ci(values: Sequence[float], batches: int = 10, z: float = Z_95) -> tuple[float, float] | None:
    """Confidence interval of the mean that tolerates autocorrelated values (batch means).

    Consecutive step times are correlated (buffers fill and drain), so the plain standard error
    would be too narrow. Splitting the run into contiguous batches and treating the batch means as
    independent is the standard remedy in simulation output analysis. Needs 2 values per batch.
    """
    n = len(values)
    k = min(batches, n // 2)
    if k < 3:
        return None
    size = n // k
    means = [sum(values[i * size : (i + 1) * size]) / size for i in range(k)]
    grand = sum(means) / k
    var = sum((m - grand) ** 2 for m in means) / (k - 1)
    t = _t_95(k - 1) if z == Z_95 else z
    half = t * math.sqrt(var / k)
    # Centre on the mean of *all* values (the batches leave out up to k-1 at the end), so the
    # interval always contains the estimate it qualifies.
    center = sum(values) / n
    return center - half, center + half


def t_95(dof: int) -> float:
    """Two-sided 95% Student t quantile (for intervals on a handful of paired measurements)."""
    return _t_95(dof)


def _t_95(dof: int) -> float:
    """Two-sided 95% Student t quantile for small degrees of freedom."""
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
    return table.get(dof, Z_95 if dof > 30 else 2.045 + (2.262 - 2.045) * (30 - dof) / 21)


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def _student_t():
    # Imported on first use: scipy.stats takes about a second to import, and most commands
    # (--help, env, report) never compute a t interval.
    from scipy import stats as scipy_stats

    return scipy_stats.t


def t_cdf(t: float, dof: float) -> float:
    """Student's t distribution function, for any positive (also fractional) degrees of freedom.

    Fractional dof are needed for Welch's interval.
    """
    if dof <= 0:
        raise ValueError("degrees of freedom must be positive")
    return float(_student_t().cdf(t, dof))


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, dof: float) -> float:
    """The p-quantile of Student's t (the inverse of `t_cdf`)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must lie strictly between 0 and 1")
    if dof <= 0:
        raise ValueError("degrees of freedom must be positive")
    return float(_student_t().ppf(p, dof))


def mean_ci(values: Sequence[float]) -> tuple[float, float] | None:
    """Student-t 95% interval of the mean of values that are themselves means of contiguous
    stretches (e.g. per-chunk times of an iterator): already batch means, so treated as
    independent. None below 3 values."""
    n = len(values)
    if n < 3:
        return None
    m = sum(values) / n
    var = sum((v - m) ** 2 for v in values) / (n - 1)
    half = _t_95(n - 1) * math.sqrt(var / n)
    return m - half, m + half
