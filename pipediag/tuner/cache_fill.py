"""The cache the tuned pipeline adds: its size estimated by reading a cut (counting it when TensorFlow cannot
tell its length), and filling it once, timed, within the RAM budget."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psutil

from pipediag.backends.tf import tf
from pipediag.builder.dataset import INFINITE, UNKNOWN, cardinality
from pipediag.builder.graph import PipelineGraph
from pipediag.records.stage import Stage
from pipediag.tuner import cache_rules, rules

_SAMPLE_ELEMENTS = 4
COUNT_CHUNK = 256  # element sizes read per next() in a counting pass


def _tensor_bytes(value) -> int:
    total = 0
    for t in tf.nest.flatten(value, expand_composites=True):
        if t.dtype == tf.string:
            total += int(tf.reduce_sum(tf.strings.length(t)).numpy())
        elif t.dtype != tf.variant:
            total += int(t.shape.num_elements() or 0) * t.dtype.size
    return total


def _element_size(*element):
    """Bytes of one element, in TensorFlow ops (strings by their length; variants not counted)."""
    total = tf.constant(0, tf.int64)
    for t in tf.nest.flatten(element, expand_composites=True):
        if t.dtype == tf.string:
            total += tf.reduce_sum(tf.cast(tf.strings.length(t), tf.int64))
        elif t.dtype not in (tf.variant, tf.resource):
            total += tf.cast(tf.size(t), tf.int64) * t.dtype.size
    return total


def _count_cut(cut, node: str, facts: rules.TuningFacts, clock_ns: Callable[[], int]) -> rules.CacheEstimate:
    """One pass over a cut TensorFlow cannot tell the length of: its elements, their bytes and
    the time the pass took (what filling a cache there takes), stopped at the first budget it
    passes. The sizes are summed in TensorFlow and read in chunks, so Python costs little."""
    sizes = cut.map(_element_size, num_parallel_calls=tf.data.AUTOTUNE).batch(COUNT_CHUNK)
    start = clock_ns()
    elements, total = 0, 0
    iterator = iter(sizes)
    while True:
        try:
            chunk = next(iterator).numpy()
            done = False
        except StopIteration:
            done = True
        else:
            elements += int(chunk.size)
            total += int(chunk.sum())
        seconds = (clock_ns() - start) / 1e9
        stop = cache_rules.counting_verdict(elements, total, seconds, done, facts)
        if stop is not None:
            return rules.CacheEstimate(node, None, total / elements if elements else None, None, unknown_reason=stop)
        if done:
            break
    if elements == 0:
        return rules.CacheEstimate(node, None, None, None, unknown_reason="one pass over it yielded no elements")
    return rules.CacheEstimate(node, elements, total / elements, seconds, counted=True)


def estimate_cache(graph: PipelineGraph, point: rules.CachePoint, final_batches: int | str, input_batches_per_sec: float | None,
                    stages: list[Stage], facts: rules.TuningFacts,
                    clock_ns: Callable[[], int] = time.monotonic_ns) -> rules.CacheEstimate:
    cut = graph.cut(point.node)
    elements = cardinality(cut)
    if elements == INFINITE:
        return rules.CacheEstimate(point.node, None, None, None)
    if elements == UNKNOWN:
        return _count_cut(cut, point.node, facts, clock_ns)
    sizes = [_tensor_bytes(e) for e in cut.take(_SAMPLE_ELEMENTS)]
    per_element = sum(sizes) / len(sizes) if sizes else None
    fill = None
    if input_batches_per_sec:
        if isinstance(final_batches, int):
            fill = final_batches / input_batches_per_sec
        else:
            batch = next((s for s in stages if s.kind == "batch" and s.index > point.stage.index), None)
            per_batch = (batch.buffer_size or 1) if batch else 1
            fill = elements / per_batch / input_batches_per_sec
    return rules.CacheEstimate(point.node, int(elements), per_element, fill)


RSS_CHECK_S = 0.05  # how often the filling cache's memory is read (psutil: ~20 µs a read)


def rss_bytes() -> int:
    return psutil.Process().memory_info().rss


def fill_cache(cached_cut, limit_s: float, ram_budget_bytes: int, clock_ns: Callable[[], int] = time.monotonic_ns,
               rss: Callable[[], int] = rss_bytes,
               guard: Callable[..., Any] | None = None) -> tuple[int | None, str | None]:
    """Iterate the cached part once so the in-memory cache is complete: (nanoseconds it took,
    None), or (None, why it was abandoned). It is abandoned when it takes over `limit_s`, or
    when this process's resident memory grows past `ram_budget_bytes` while it fills. The size
    estimate that chose the cache rests on the dataset's cardinality (or a counting pass), which
    can be wrong (an `assert_cardinality` that lies, a filter, elements that vary in size); the
    memory actually taken is what decides. A cache whose first pass is abandoned is discarded by
    TensorFlow (its iterator is dropped here), so stopping is safe.

    Elements are read in chunks of about `RSS_CHECK_S`, memory and time checked between chunks;
    `guard` (`Watchdog.call`) runs each chunk under the stall deadline, so a pipeline that stalls
    while the cache fills raises `Stalled` instead of hanging."""
    start = clock_ns()
    base = rss()
    iterator = iter(cached_cut)
    chunk_ns = int(RSS_CHECK_S * 1e9)

    def chunk() -> bool:
        """Read elements for about RSS_CHECK_S; True when the pass has ended."""
        t0 = clock_ns()
        for _ in iterator:  # noqa: F821 (closure over `iterator`, deleted once the pass ends)
            if clock_ns() - t0 >= chunk_ns:
                return False
        return True

    try:
        while True:
            done = chunk() if guard is None else guard(chunk, "filling the tuned mode's cache")
            if done:
                break
            if (clock_ns() - start) / 1e9 > limit_s:
                return None, f"filling it took over {limit_s:.0f} s; stopped"
            grown = rss() - base
            if grown > ram_budget_bytes:
                return None, (f"while it filled, this process's memory grew by {grown / 2**30:.2f} GiB, past the "
                              f"RAM budget of {ram_budget_bytes / 2**30:.2f} GiB (--ram-budget-mb): abandoned "
                              "before it could exhaust memory; the dataset holds more than its size estimate said")
    except tf.errors.OpError as error:  # e.g. an assert_cardinality that lies: TensorFlow stops the pass
        first = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
        return None, f"filling it failed, so it was abandoned: {type(error).__name__}: {first}"
    finally:
        del iterator  # an unfinished cache is released with its iterator
    grown = rss() - base
    if grown > ram_budget_bytes:
        return None, (f"once filled it took {grown / 2**30:.2f} GiB, past the RAM budget of "
                      f"{ram_budget_bytes / 2**30:.2f} GiB (--ram-budget-mb): dropped")
    return clock_ns() - start, None
