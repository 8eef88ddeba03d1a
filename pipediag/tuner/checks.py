"""Is a rewritten pipeline still the user's pipeline? Comparing first batches (TensorFlow side).

A deterministic pipeline must give the same values after rewriting (exactly, or within float
rounding where whole-batch kernels round differently); a random one can only be held to the same
structure, shapes and types. Whether the original is deterministic is not only read from its
graph (random ops, shuffle): its first batches from two fresh iterators (pipeline and input_only
modes) are compared too, which catches randomness the graph does not show (NumPy inside a
`py_function`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipediag.backends.tf import tf
from pipediag.modes.feeds import same_structure

RTOL = 1e-5  # float results of a batched kernel may differ in the last bits from per-element ones
ATOL = 1e-6
# An approximate change (a JPEG decoded at a reduced size, tuner.decode_reduce) gives nearly the same
# image: each float output's mean |difference| must stay within this share of the original's value range.
APPROX_MEAN_REL = 0.03


@dataclass(frozen=True)
class OutputCheck:
    ok: bool | None  # None: nothing to compare
    text: str


def paired_arrays(expected: list, got: list) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """The batches' components side by side as NumPy arrays (variants left out), or None when the
    batches differ in number, structure, shape or dtype: what both value checks start from."""
    if not expected or len(expected) != len(got):
        return None
    pairs = []
    for a, b in zip(expected, got):
        if not same_structure(a, b):
            return None
        for x, y in zip(tf.nest.flatten(a, expand_composites=True), tf.nest.flatten(b, expand_composites=True)):
            if getattr(x, "dtype", None) == tf.variant:
                continue
            x, y = np.asarray(x), np.asarray(y)
            if x.shape != y.shape or x.dtype != y.dtype:
                return None
            pairs.append((x, y))
    return pairs


def compare_values(expected: list, got: list) -> str | None:
    """'identical values', 'equal within float rounding (rtol ...)', or None when they differ."""
    pairs = paired_arrays(expected, got)
    if pairs is None:
        return None
    exact = True
    for x, y in pairs:
        if np.array_equal(x, y):
            continue
        exact = False
        if x.dtype.kind not in "fc" or not np.allclose(x, y, rtol=RTOL, atol=ATOL):
            return None
    return "identical values" if exact else f"equal within float rounding (rtol {RTOL:g})"


def compare_random_values(expected: list, again: list, got: list) -> str | None:
    """A random function run element by element twice (`expected`, `again`) and on whole batches
    (`got`), all on the same input: the parts that came out the same in both element-wise runs
    are the draws' untouched parts and must equal the batched ones (within float rounding); the
    parts that differ between them are random and must only agree in shape and type. None when
    anything disagrees."""
    if not expected or not (len(expected) == len(again) == len(got)):
        return None
    random: set[int] = set()
    leaves = 0
    for a, a2, b in zip(expected, again, got):
        if not same_structure(a, b):
            return None
        flat = [tf.nest.flatten(t, expand_composites=True) for t in (a, a2, b)]
        leaves = len(flat[0])
        for i, (x, x2, y) in enumerate(zip(*flat)):
            if getattr(x, "dtype", None) == tf.variant:
                continue
            x, x2, y = np.asarray(x), np.asarray(x2), np.asarray(y)
            if x.shape != y.shape or x.dtype != y.dtype:
                return None
            if x.shape == x2.shape and np.array_equal(x, x2):
                if compare_values([x], [y]) is None:
                    return None
            else:
                random.add(i)
    if not random:
        return "no output differed between two element-wise runs, and the batched values equal them"
    fixed = leaves - len(random)
    return (f"{len(random)} of {leaves} output(s) differ between two element-wise runs (random): on a batch they "
            "have the same shapes and types" + (f"; the other {fixed} equal the element-wise values" if fixed else ""))


def _shapes(batch) -> list[tuple]:
    return [(tuple(np.shape(t)), str(getattr(t, "dtype", type(t).__name__)))
            for t in tf.nest.flatten(batch, expand_composites=True)]


def is_deterministic(has_random_stage: bool, first: list, second: list | None) -> tuple[bool, str | None]:
    """(deterministic?, why not) from the graph and from two fresh runs of the original."""
    if has_random_stage:
        return False, "the pipeline has random stages"
    if second is None:
        return True, None
    n = min(len(first), len(second))
    if n == 0 or compare_values(first[:n], second[:n]) is None:
        return False, "two fresh runs of the original gave different first batches (randomness inside its functions)"
    return True, None


def compare_close(expected: list, got: list) -> str | None:
    """For an approximate change: the same structure, shapes and dtypes, non-float values equal, and
    every float output's mean |difference| within APPROX_MEAN_REL of its value range; the text, or None."""
    pairs = paired_arrays(expected, got)
    if pairs is None:
        return None
    worst_mean = worst_max = 0.0
    for x, y in pairs:
        if x.dtype.kind not in "fc":
            if not np.array_equal(x, y):
                return None
            continue
        span = float(np.ptp(x)) if x.size else 0.0
        diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
        if diff.size and span > 0:
            worst_mean, worst_max = max(worst_mean, float(diff.mean()) / span), max(worst_max, float(diff.max()) / span)
        elif diff.size and diff.max() > 0:
            return None
    if worst_mean > APPROX_MEAN_REL:
        return None
    return (f"close, as an approximate change allows: mean |difference| {100 * worst_mean:.2f}% of the value range "
            f"(at most {100 * APPROX_MEAN_REL:g}%), largest {100 * worst_max:.0f}%")


def check_outputs(reference: list, candidate: list, deterministic: bool, why_random: str | None = None,
                  approximate: bool = False) -> OutputCheck:
    """Compare a rewritten pipeline's first batches with the original's; `approximate`: a change
    it holds gives nearly the same values by design (compare_close)."""
    n = min(len(reference), len(candidate))
    if n == 0:
        return OutputCheck(None, "not checked: no batches to compare")
    if deterministic and approximate:
        verdict = compare_values(reference[:n], candidate[:n]) or compare_close(reference[:n], candidate[:n])
        if verdict is None:
            return OutputCheck(False, f"its first {n} batch(es) are NOT CLOSE to the original's")
        return OutputCheck(True, f"checked: first {n} batch(es) against the original's: {verdict}")
    if deterministic:
        verdict = compare_values(reference[:n], candidate[:n])
        if verdict is None:
            return OutputCheck(False, f"its first {n} batch(es) DIFFER from the original's")
        return OutputCheck(True, f"checked: first {n} batch(es) equal the original's ({verdict})")
    same = all(same_structure(a, b) and _same_ranks(a, b) for a, b in zip(reference[:n], candidate[:n]))
    why = f" ({why_random})" if why_random else ""
    if not same:
        return OutputCheck(False, f"its first {n} batch(es) have a DIFFERENT structure from the original's")
    return OutputCheck(True, f"random pipeline{why}: checked that the first {n} batch(es) have the same structure, "
                             "shapes and types")


def _same_ranks(a, b) -> bool:
    """Same dtypes and shapes, allowing a shorter last batch and ragged lengths to differ."""
    sa, sb = _shapes(a), _shapes(b)
    if len(sa) != len(sb):
        return False
    for (shape_a, dtype_a), (shape_b, dtype_b) in zip(sa, sb):
        if dtype_a != dtype_b or len(shape_a) != len(shape_b) or shape_a[1:] != shape_b[1:]:
            return False
    return True
