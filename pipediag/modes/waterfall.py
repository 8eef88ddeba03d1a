"""Timing the pipeline cut after each stage (TensorFlow side of the anatomy).

For every stage the pure plan (`analysis.waterfall.timing_plan`) allows, the pipeline is rebuilt
up to that stage (`PipelineGraph.cut`, with the user's dataset options) and iterated. Calls to
`next()` cost ~50 µs of Python each on the development machine, as much as a cheap stage's work
for one element, so a cut that yields elements is read through `shard(n, n - 1)`: tf.data pulls
n elements in C++ per call, n chosen so one call covers about `call_target_s` of the final
pipeline's work. The last stage is timed first to know that rate. Calls are grouped into chunks
that double until one takes `chunk_target_s` (warm-up: buffers fill, AUTOTUNE ramps up); timed
chunks of that size follow until the rate is pinned down (±10%, 95%) or `stage_cap_s` is spent.
Finite cuts are repeated inside tf.data, as the user's own `repeat` would. Each cut also gives
its cardinality and the bytes of a few elements. Stages that cannot be timed get None and a
reason; nothing is guessed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from pipediag.analysis.waterfall import (
    Anatomy,
    StageTiming,
    build_anatomy,
    deep_enough,
    elements_per_batch,
    is_stable,
    rate,
    timing_plan,
)
from pipediag.backends.tf import tf
from pipediag.builder.dataset import INFINITE, cardinality
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.records.stage import Stage

_SIZE_SAMPLES = 4
_PREFETCH = 2  # each cut ends in a small buffer: the reading side is not in series with the stage
_SIZE_SAMPLE_S = 0.3


@dataclass(frozen=True)
class WaterfallRule:
    stage_cap_s: float = 1.0  # timed window per stage, at most
    min_stage_s: float = 0.25  # and at least, before stability is checked
    total_cap_s: float = 12.0  # all stages together; the rest are reported as not timed
    chunk_target_s: float = 0.02  # a timed chunk of next() calls lasts at least this long
    call_target_s: float = 0.002  # one next() on an element stage covers ~this much of the final work
    # Stop once the stages timed name the slow one beyond what the rest could change
    # (analysis.waterfall.deep_enough); False times every stage.
    only_deep_enough: bool = True


THOROUGH = WaterfallRule(stage_cap_s=3.0, min_stage_s=1.0, total_cap_s=45.0, chunk_target_s=0.05,
                         only_deep_enough=False)
QUICK = WaterfallRule(stage_cap_s=0.5, min_stage_s=0.15, total_cap_s=5.0)  # --quick


@dataclass(frozen=True)
class AnatomyResult:
    stages: list[Stage]  # enriched with cardinality and bytes per element
    anatomy: Anatomy


def _element_bytes(value) -> int | None:
    total = 0
    for t in tf.nest.flatten(value, expand_composites=True):
        if t.dtype == tf.variant or t.dtype == tf.resource:
            return None  # ragged/sparse parts encoded as variants: their size is not visible here
        if t.dtype == tf.string:
            total += int(tf.reduce_sum(tf.strings.length(t)).numpy())
        else:
            total += int(t.shape.num_elements() or 0) * t.dtype.size
    return total


def _pull(iterator, calls: int) -> int:
    """Call next() up to `calls` times; how many returned an element."""
    for i in range(calls):
        try:
            next(iterator)
        except StopIteration:
            return i
    return calls


def _time_cut(dataset, per_call: int, rule: WaterfallRule, cap_s: float, clock_ns: Callable[[], int],
              guard: Callable[[Callable[[], int]], int] = lambda fn: fn()):
    """(StageTiming fields, bytes per element) for one cut; each next() yields `per_call` elements.
    `guard` runs each chunk of next() calls (under the watchdog's deadline)."""
    iterator = iter(dataset)

    def pull(calls: int) -> int:
        return guard(lambda: _pull(iterator, calls))

    start = clock_ns()
    if pull(1) == 0:
        return dict(reason="the pipeline up to here yields no elements"), None
    calls = 1
    target_ns = int(rule.chunk_target_s * 1e9)
    while True:  # warm-up: double the chunk until one takes the target time
        t0 = clock_ns()
        got = pull(calls)
        dt = clock_ns() - t0
        if got < calls:
            return dict(reason="the pipeline up to here ended during warm-up"), None
        if dt >= target_ns or (clock_ns() - start) / 1e9 > cap_s:
            break
        calls *= 2
    warmup_ns = clock_ns() - start - dt
    chunk_elements, chunk_ns = [got * per_call], [dt]
    window_start = clock_ns() - dt
    stop = "time_cap"
    while True:
        elapsed = (clock_ns() - window_start) / 1e9
        if elapsed >= cap_s:
            break
        if elapsed >= rule.min_stage_s and is_stable(chunk_elements, chunk_ns):
            stop = "stable"
            break
        t0 = clock_ns()
        got = pull(calls)
        dt = clock_ns() - t0
        if got:
            chunk_elements.append(got * per_call)
            chunk_ns.append(dt)
        if got < calls:
            stop = "exhausted"
            break
    timing = dict(chunk_elements=tuple(chunk_elements), chunk_ns=tuple(chunk_ns), warmup_ns=warmup_ns, stop_reason=stop)
    return timing, _mean_element_bytes(iterator, clock_ns, guard)


def _mean_element_bytes(iterator, clock_ns: Callable[[], int],
                        guard: Callable[[Callable[[], object]], object] = lambda fn: fn()) -> float | None:
    """The mean size of the next few elements (at most _SIZE_SAMPLES, for about _SIZE_SAMPLE_S);
    None when none came or one's size is not visible (ragged or sparse parts)."""
    sizes = []
    sample_start = clock_ns()
    for _ in range(_SIZE_SAMPLES):
        try:
            value = guard(lambda: next(iterator))
        except StopIteration:
            break
        size = _element_bytes(value)
        if size is None:
            return None
        sizes.append(size)
        if (clock_ns() - sample_start) / 1e9 > _SIZE_SAMPLE_S:
            break
    return sum(sizes) / len(sizes) if sizes else None


def measure_anatomy(
    graph: PipelineGraph,
    options=None,
    *,
    batch_size: int | None = None,
    rule: WaterfallRule = WaterfallRule(),
    first_batch_s: float | None = None,
    clock_ns: Callable[[], int] = time.monotonic_ns,
    progress: Callable[[str], None] | None = None,
    watchdog=None,
) -> AnatomyResult:
    """Time each stage's cut; enrich the stages with cardinality and bytes per element.

    first_batch_s: how long the whole pipeline took to its first batch. A cut after a shuffle
    fills that buffer again before its first element, which can take about as long; such a cut
    is skipped, and says so, when that would overrun the waterfall's budget.

    watchdog (modes.watchdog.Watchdog): each chunk of next() calls runs under its deadline; a cut
    that stalls raises `Stalled` (the cuts are timed last stage first, so the caller finds the
    stage with `modes.probe.locate`)."""
    started = clock_ns()
    stages = graph.stages()
    plan = timing_plan(stages, batch_size)
    factors = [f for f, _ in elements_per_batch(stages, batch_size)]
    timings: dict[int, StageTiming] = {}
    cuts, counts = _cuts(graph, stages, options, timings)
    sizes: dict[int, float | None] = {}
    timed = [s for s in stages if plan[s.index] is None and s.index in cuts]
    # The last timed stage first: its rate sets how many elements one next() should pull upstream.
    order = timed[-1:] + timed[:-1]
    final_bps: float | None = None
    first_shuffle = next((s.index for s in stages if s.kind == "shuffle"), None)
    for position, stage in enumerate(order):
        spent = (clock_ns() - started) / 1e9
        skip = _skip_reason(stage, spent, first_shuffle, first_batch_s, rule)
        if skip is not None:
            timings[stage.index] = StageTiming(stage.index, reason=skip)
            continue
        factor = factors[stage.index] or 1
        per_call = 1
        if factor > 1 and final_bps:
            per_call = max(1, min(factor * 64, math.ceil(factor * final_bps * rule.call_target_s)))
        dataset = _endless(cuts[stage.index], counts[stage.index], per_call)
        if progress is not None:
            progress(stage.label)
        try:
            fields, sizes[stage.index] = _time_cut(
                dataset, per_call, rule, min(rule.stage_cap_s, rule.total_cap_s - spent), clock_ns,
                _stage_guard(watchdog, stage.label))
        except (tf.errors.OpError, ValueError, TypeError) as error:
            fields = dict(reason=f"iterating the pipeline up to here failed: {type(error).__name__}: {error}")
        timing = StageTiming(stage.index, **fields)
        timings[stage.index] = timing
        if final_bps is None and timing.chunk_ns:
            value, _ = rate(timing.chunk_elements, timing.chunk_ns)
            final_bps = None if value is None else value / factor
        rest = order[position + 1:]
        enough = (deep_enough(stages, timings, order[0].index, batch_size)
                  if rule.only_deep_enough and position > 0 and rest else None)
        if enough is not None and _buffers_sized(stages, rest, cuts, sizes, first_shuffle, clock_ns, watchdog):
            for later in rest:
                timings[later.index] = StageTiming(later.index, reason=enough)
            break
    enriched = _enrich(stages, timings, plan, sizes, counts)
    anatomy = build_anatomy(enriched, timings, batch_size, seconds=(clock_ns() - started) / 1e9)
    return AnatomyResult(enriched, anatomy)


def _buffers_sized(stages: list[Stage], rest: list[Stage], cuts: dict[int, object], sizes: dict[int, float | None],
                   first_shuffle: int | None, clock_ns: Callable[[], int], watchdog) -> bool:
    """Whether every shuffle among the stages left untimed still gets its bytes per element (the
    memory rules read a shuffle buffer's bytes, analysis.buffers): from the stage feeding it, timed
    already or read now (a few elements) where that cut comes before the first shuffle. False where
    one would need a cut past a shuffle read, which fills that buffer again: then go on timing."""
    for shuffle in (s for s in rest if s.kind == "shuffle" and s.index > 0):
        feeder = shuffle.index - 1
        if feeder in sizes:  # timed or read already: a size, or None where it is not visible (ragged)
            if sizes[feeder] is None:
                return False
            continue
        if first_shuffle is None or feeder >= first_shuffle or feeder not in cuts:
            return False
        try:
            sizes[feeder] = _mean_element_bytes(iter(cuts[feeder]), clock_ns, _stage_guard(watchdog, stages[feeder].label))
        except (tf.errors.OpError, ValueError, TypeError):
            return False
        if sizes[feeder] is None:
            return False
    return True


def measure_sizes(graph: PipelineGraph, options=None, *, clock_ns: Callable[[], int] = time.monotonic_ns,
                  watchdog=None) -> list[Stage]:
    """The stages with their cardinality and the bytes of a few elements, none of them timed: what
    the verdict's memory rules read (a shuffle buffer's bytes) when timing each stage could not
    change the answer (fixes.worth_tuning.stages_untimed_reason). Only the cuts before the first shuffle are read: a
    cut past it would fill that buffer again first, and the shuffle's own elements are those of the
    stage feeding it (analysis.buffers)."""
    stages = graph.stages()
    cuts, counts = _cuts(graph, stages, options, {})
    first_shuffle = next((s.index for s in stages if s.kind == "shuffle"), len(stages))
    sizes: dict[int, float | None] = {}
    for stage in stages:
        if stage.index >= first_shuffle or stage.index not in cuts:
            continue
        guard = _stage_guard(watchdog, stage.label)
        try:
            iterator = iter(cuts[stage.index])
            sizes[stage.index] = _mean_element_bytes(iterator, clock_ns, guard)
        except (tf.errors.OpError, ValueError, TypeError):
            sizes[stage.index] = None  # not read: no size, and the memory rules make no guess
    return _enrich(stages, {}, dict.fromkeys((s.index for s in stages), "not timed"), sizes, counts)


def _cuts(graph: PipelineGraph, stages: list[Stage], options,
          timings: dict[int, StageTiming]) -> tuple[dict[int, object], dict[int, object]]:
    """Each stage's cut (the pipeline up to it) and its cardinality; a stage whose cut cannot be
    rebuilt gets its reason in `timings`."""
    cuts: dict[int, object] = {}
    counts: dict[int, object] = {}
    for stage in stages:
        try:
            cut = graph.cut(stage.node)
            if options is not None:
                cut = cut.with_options(options)
            counts[stage.index] = cardinality(cut)
            cuts[stage.index] = cut
        except (GraphError, tf.errors.OpError, ValueError, TypeError) as error:
            timings[stage.index] = StageTiming(stage.index, reason=f"could not rebuild the pipeline up to here: {error}")
    return cuts, counts


def _skip_reason(stage: Stage, spent: float, first_shuffle: int | None, first_batch_s: float | None,
                 rule: WaterfallRule) -> str | None:
    """Why this cut is not timed: the budget is spent, or its shuffle buffer would fill again past it; None to time it."""
    if spent >= rule.total_cap_s:
        return f"not timed: the waterfall's {rule.total_cap_s:.0f} s budget was spent"
    refill = first_shuffle is not None and stage.index >= first_shuffle and first_batch_s is not None
    if refill and spent + first_batch_s + rule.min_stage_s > rule.total_cap_s:
        return (f"not timed: its shuffle buffer would fill again first (~{first_batch_s:.0f} s, "
                f"as long as the first batch took), over the waterfall's {rule.total_cap_s:.0f} s budget")
    return None


def _endless(dataset, count, per_call: int):
    """The cut read again like an epoch loop (unless infinite), one element in `per_call` kept, prefetched."""
    if count != INFINITE:  # finite or unknown: read it again like an epoch loop (an empty one ends)
        dataset = dataset.repeat()
    if per_call > 1:
        dataset = dataset.shard(per_call, per_call - 1)
    return dataset.prefetch(_PREFETCH)


def _enrich(stages: list[Stage], timings: dict[int, StageTiming], plan, sizes: dict[int, float | None],
            counts: dict[int, object]) -> list[Stage]:
    """The stages with their cardinality and bytes per element; a stage not timed gets the plan's reason."""
    enriched: list[Stage] = []
    for stage in stages:
        if stage.index not in timings:
            timings[stage.index] = StageTiming(stage.index, reason=plan[stage.index])
        size = sizes.get(stage.index)
        if size is None and enriched and stage.kind in ("prefetch", "options"):
            size = enriched[-1].bytes_per_element  # the same elements, buffered
        enriched.append(replace(stage, cardinality=counts.get(stage.index), bytes_per_element=size))
    return enriched


def _stage_guard(watchdog, label: str) -> Callable[[Callable[[], int]], int]:
    if watchdog is None:
        return lambda fn: fn()
    return lambda fn: watchdog.call(fn, f"the anatomy, timing the pipeline up to {label}")
