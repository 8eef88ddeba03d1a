"""Small, dependency-free statistics on timings: medians, percentiles, confidence intervals.

Used by the modes (to decide when a timing is stable) and by the analysis. Inputs are plain
sequences of numbers; nothing here knows about TensorFlow or samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Z_95 = 1.959964


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100] (numpy's default method)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


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
    return grand - half, grand + half


def _t_95(dof: int) -> float:
    """Two-sided 95% Student t quantile for small degrees of freedom."""
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
    return table.get(dof, Z_95 if dof > 30 else 2.045 + (2.262 - 2.045) * (30 - dof) / 21)


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


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
