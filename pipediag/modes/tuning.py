"""Building the tuned pipeline: the user's own graph with pipediag's changes applied.

The rules in `tuning_rules` decide; this module edits the graph (`builder.graph`) and fills the
cache once, timed, before the tuned mode starts, so the mode measures the steady state a second
epoch would see.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pipediag.backends.tf import tf
from pipediag.builder.dataset import INFINITE, UNKNOWN, cardinality
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.builder.stages import Stage
from pipediag.modes import tuning_rules as rules
from pipediag.modes.changes import Change

_SAMPLE_ELEMENTS = 4


@dataclass
class TunedPipeline:
    dataset: object
    changes: list[Change]
    stages_before: list[Stage]
    cache_fill_ns: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def applied(self) -> list[Change]:
        return [c for c in self.changes if c.applied]


def _tensor_bytes(value) -> int:
    total = 0
    for t in tf.nest.flatten(value, expand_composites=True):
        if t.dtype == tf.string:
            total += int(tf.reduce_sum(tf.strings.length(t)).numpy())
        elif t.dtype != tf.variant:
            total += int(t.shape.num_elements() or 0) * t.dtype.size
    return total


def _make_parallel_map(graph: PipelineGraph, node_name: str) -> None:
    node = graph.nodes[node_name]
    controls = [i for i in node.input if i.startswith("^")]
    data = [i for i in node.input if not i.startswith("^")]
    npc = graph.add_const(-1, tf.int64)
    node.op = "ParallelMapDatasetV2"
    del node.input[:]
    node.input.extend(data + [npc] + controls)
    if "force_synchronous" in node.attr:
        del node.attr["force_synchronous"]
    node.attr["deterministic"].s = b"true"


def _make_parallel_interleave(graph: PipelineGraph, node_name: str) -> None:
    node = graph.nodes[node_name]
    controls = [i for i in node.input if i.startswith("^")]
    data = [i for i in node.input if not i.startswith("^")]
    extra = [graph.add_const(-1, tf.int64) for _ in range(3)]  # buffer, prefetch, num_parallel_calls
    node.op = "ParallelInterleaveDatasetV4"
    del node.input[:]
    node.input.extend(data + extra + controls)
    node.attr["deterministic"].s = b"true"


def _flat_map_to_interleave(graph: PipelineGraph, node_name: str, cycle_length: int) -> None:
    """flat_map over file names (one file after another) -> parallel interleave over them."""
    node = graph.nodes[node_name]
    controls = [i for i in node.input if i.startswith("^")]
    data = [i for i in node.input if not i.startswith("^")]
    extra = [graph.add_const(cycle_length, tf.int64), graph.add_const(1, tf.int64)]  # cycle, block
    extra += [graph.add_const(-1, tf.int64) for _ in range(3)]  # buffer, prefetch, num_parallel_calls
    node.op = "ParallelInterleaveDatasetV4"
    del node.input[:]
    node.input.extend(data + extra + controls)
    node.attr["deterministic"].s = b"true"


def _file_interleave(graph: PipelineGraph, stage: Stage, cores: int) -> Callable[[object], object]:
    node = graph.nodes[stage.node]
    inputs = graph.data_inputs(stage.node)
    files = graph.const_value(inputs[0]).reshape(-1)
    compression = graph.const_value(inputs[1])
    buffer_size = graph.const_value(inputs[2])
    compression = compression.decode() if isinstance(compression, bytes) else str(compression)
    buffer_size = int(buffer_size) if buffer_size is not None else None
    if node.op.startswith("TFRecordDataset"):
        def reader(f):
            return tf.data.TFRecordDataset(f, compression_type=compression, buffer_size=buffer_size)
    elif node.op == "TextLineDataset":
        def reader(f):
            return tf.data.TextLineDataset(f, compression_type=compression, buffer_size=buffer_size)
    else:
        raise GraphError(f"{node.op} is not handled by the file interleave")
    cycle = max(1, min(len(files), 2 * cores))

    def transform(_unused):
        return tf.data.Dataset.from_tensor_slices(files).interleave(
            reader, cycle_length=cycle, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
        )

    return transform


def _estimate_cache(graph: PipelineGraph, point: Stage, final_batches: int | str, input_batches_per_sec: float | None,
                    stages: list[Stage]) -> rules.CacheEstimate:
    cut = graph.cut(point.node)
    elements = cardinality(cut)
    if elements in (INFINITE, UNKNOWN):
        return rules.CacheEstimate(point.node, None, None, None)
    sizes = [_tensor_bytes(e) for e in cut.take(_SAMPLE_ELEMENTS)]
    per_element = sum(sizes) / len(sizes) if sizes else None
    fill = None
    if input_batches_per_sec:
        if isinstance(final_batches, int):
            fill = final_batches / input_batches_per_sec
        else:
            batch = next((s for s in stages if s.kind == "batch" and s.index > point.index), None)
            per_batch = (batch.buffer_size or 1) if batch else 1
            fill = elements / per_batch / input_batches_per_sec
    return rules.CacheEstimate(point.node, int(elements), per_element, fill)


def tune(
    dataset,
    facts: rules.TuningFacts,
    *,
    input_batches_per_sec: float | None,
    clock_ns: Callable[[], int] = time.monotonic_ns,
) -> TunedPipeline:
    """The user's pipeline with the changes the rules allow. Never raises for a pipeline whose
    graph cannot be edited: it falls back to options and a final prefetch, and says so."""
    try:
        graph = PipelineGraph.from_dataset(dataset)
        stages = graph.stages()
    except GraphError as error:
        fallback = dataset.prefetch(tf.data.AUTOTUNE).with_options(_options(facts, latency=False))
        change = Change("prefetch", None, None, "prefetch(AUTOTUNE) at the end", applied=True)
        return TunedPipeline(fallback, [change], [], notes=[f"graph not editable, options only: {error}"])

    changes: list[Change] = []
    for change in rules.parallel_map_changes(stages, facts):
        if change.applied:
            _make_parallel_map(graph, change.node)
        changes.append(change)
    for change in rules.interleave_changes(stages):
        if change.applied:
            stage = next(s for s in stages if s.node == change.node)
            try:
                if stage.kind == "interleave":
                    _make_parallel_interleave(graph, change.node)
                elif stage.op == "FlatMapDataset":
                    _flat_map_to_interleave(graph, change.node, cycle_length=min(stage.source_files, 2 * facts.cores))
                else:
                    graph.splice_over(change.node, _file_interleave(graph, stage, facts.cores), "interleave")
            except GraphError as error:
                change = change.skipped(str(error))
        changes.append(change)

    cache_fill_ns = None
    point = rules.cache_point(graph.stages())
    if point is not None:
        estimate = _estimate_cache(graph, point, cardinality(dataset), input_batches_per_sec, graph.stages())
        change = rules.cache_change(point, estimate, facts)
        if change.applied:
            without_cache = graph.copy()
            cached = graph.splice_over(point.node, lambda d: d.cache(), "cache")
            cache_fill_ns = _fill(graph.cut(cached), 2 * facts.fill_budget_seconds, clock_ns)
            if cache_fill_ns is None:
                graph = without_cache
                change = change.skipped(f"filling it took over {2 * facts.fill_budget_seconds:.0f} s; stopped")
            else:
                change = Change(**{**change.to_dict(), "details": {**change.details, "fill_ns": cache_fill_ns}})
        changes.append(change)

    prefetch = rules.prefetch_change(graph.stages())
    if prefetch.applied:
        graph.splice_over(graph.output, lambda d: d.prefetch(tf.data.AUTOTUNE), "prefetch")
    changes.append(prefetch)

    threading = rules.threading_change(facts)
    changes.append(threading)
    tuned = graph.to_dataset().with_options(_options(facts, latency=threading.applied))
    return TunedPipeline(tuned, changes, stages, cache_fill_ns)


def _fill(cached_cut, limit_s: float, clock_ns: Callable[[], int]) -> int | None:
    """Iterate the cached part once so the in-memory cache is complete; None if it overran.
    A cache whose first pass is abandoned is discarded by TensorFlow, so stopping is safe."""
    start = clock_ns()
    for _ in cached_cut:
        if (clock_ns() - start) / 1e9 > limit_s:
            return None
    return clock_ns() - start


def _options(facts: rules.TuningFacts, latency: bool):
    options = tf.data.Options()
    options.autotune.enabled = True
    if latency:
        options.threading.private_threadpool_size = rules.LATENCY_THREADPOOL_SIZE
    return options
