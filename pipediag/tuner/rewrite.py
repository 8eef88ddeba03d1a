"""Building the tuned pipeline: the user's own graph with pipediag's changes applied.

Two steps. `plan_tuning` decides (with the rules in `tuning_rules`) which changes could apply,
estimates the cache, and checks batch-before-map candidates on real data. `build` then applies
any subset of the planned changes to a copy of the graph (the ablation builds each change alone,
then all that held up together) and fills a cache once, timed, so a mode measures the steady
state a second epoch would see. `tune` does both for all planned changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import psutil

from pipediag.backends.tf import tf
from pipediag.builder.dataset import INFINITE, UNKNOWN, cardinality
from pipediag.builder.functions import UserFunction, per_call_draws, user_functions
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.records.stage import Stage
from pipediag.tuner import batch_csv, decode_crop
from pipediag.tuner import rules
from pipediag.records.change import Change
from pipediag.tuner.checks import compare_random_values, compare_values
from pipediag.records.container import ContainerLimits
from pipediag.samples.container import read_limits

_SAMPLE_ELEMENTS = 4
COUNT_CHUNK = 256  # element sizes read per next() in a counting pass
VECTORIZE_CHECK_BATCHES = 3
VECTORIZE_CHECK_SECONDS = 5.0  # a check that would take longer is skipped (and said so)


@dataclass
class TuningPlan:
    """What could be changed in the user's pipeline; `build` applies any subset of it."""

    dataset: object
    graph: PipelineGraph | None  # None: the graph could not be read; options and prefetch only
    stages: list[Stage]
    facts: rules.TuningFacts
    changes: list[Change]  # applied=True: a candidate; otherwise left out, with the reason
    functions: dict[str, UserFunction] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def candidates(self) -> list[Change]:
        return [c for c in self.changes if c.applied]


@dataclass
class TunedPipeline:
    dataset: object
    changes: list[Change]  # every planned change; applied=True for those in this pipeline
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
        stop = rules.counting_verdict(elements, total, seconds, done, facts)
        if stop is not None:
            return rules.CacheEstimate(node, None, total / elements if elements else None, None, unknown_reason=stop)
        if done:
            break
    if elements == 0:
        return rules.CacheEstimate(node, None, None, None, unknown_reason="one pass over it yielded no elements")
    return rules.CacheEstimate(node, elements, total / elements, seconds, counted=True)


def _estimate_cache(graph: PipelineGraph, point: rules.CachePoint, final_batches: int | str, input_batches_per_sec: float | None,
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


def prefetch_injected(options) -> bool:
    """Will TensorFlow end a synchronous pipeline with an autotuned prefetch of its own? Its
    inject_prefetch optimization does, unless turned off, whenever autotune is on."""
    return options.experimental_optimization.inject_prefetch is not False and options.autotune.enabled is not False


def facts_for(dataset, *, ram_budget_bytes: int | None, fill_budget_seconds: float,
              latency_bound: bool, container: ContainerLimits | None = None) -> rules.TuningFacts:
    """The facts the tuning rules need: the measured ones given, the cores this process may use
    (the container's limit, else the host's), the RAM budget (default: half of the memory
    available now, within the container's memory limit when it has one) and what the dataset's
    own options turn on."""
    options = dataset.options()
    container = container or read_limits()
    available = psutil.virtual_memory().available
    if container.memory_limit_bytes:
        # The limit counts this process's memory too: what is left under it is the limit less RSS.
        left = container.memory_limit_bytes - psutil.Process().memory_info().rss
        available = max(0, min(available, left))
    return rules.TuningFacts(
        cores=container.whole_cores,
        cpu_limit=container.cpu_text() if container.cpu_limited else None,
        default_threads=container.affinity_cores,
        ram_budget_bytes=ram_budget_bytes or int(available * 0.5),
        fill_budget_seconds=fill_budget_seconds,
        latency_bound=latency_bound,
        map_parallelization_on=options.experimental_optimization.map_parallelization is not False,
        prefetch_injected=prefetch_injected(options),
    )


def _decode_crop_changes(graph: PipelineGraph, stages: list[Stage]) -> list[Change]:
    changes = []
    for s in stages:
        if s.kind not in ("map", "parallel_map"):
            continue
        found = decode_crop.find_in_stage(graph, s.node)
        if isinstance(found, decode_crop.Site):
            form = {"decoder": found.decoder, "sampled_box": found.sampled_box, "center_crop": bool(found.conds)}
            changes.append(rules.decode_crop_change(s, None, found.crop_size, form=form))
        elif found is not None:
            changes.append(rules.decode_crop_change(s, found))
        else:  # the stage decodes nothing itself: does it crop what an earlier stage decoded?
            across = decode_crop.find_across(graph, s.node)
            if isinstance(across, decode_crop.AcrossSite):
                decoder = next(t for t in stages if t.node == across.decode_node)
                changes.append(rules.decode_crop_change(s, None, across.crop_size, decoder, across.tfds, across.feature))
            elif across is not None:
                changes.append(rules.decode_crop_change(s, across))
    return changes


def _batch_csv_changes(graph: PipelineGraph, stages: list[Stage]) -> list[Change]:
    """CSV parsed row by row before a batch: parse batches of lines instead (batch_csv)."""
    return [_csv_change(graph, stages, reader, batch, site) for reader, batch, site in batch_csv.find(graph, stages)]


def _csv_change(graph: PipelineGraph, stages: list[Stage], reader: Stage, batch: Stage | None,
                site: batch_csv.CsvSite | str) -> Change:
    if isinstance(site, str):
        return rules.batch_csv_change(reader, batch, site)
    between = [s.label for s in stages if s.node in site.between]
    scan = batch_csv.scan_quoted_newlines(batch_csv.file_names(graph, site), site.use_quote_delim)
    return rules.batch_csv_change(reader, batch, None, scan, {**site.snippet_details(), "between": between})


def check_batch_csv(graph: PipelineGraph, change: Change) -> Change:
    """The CSV change again on the pipeline as it is now: the same site, the files read again."""
    stages = graph.stages()
    for reader, batch, site in batch_csv.find(graph, stages):
        if reader.node == change.node:
            return _csv_change(graph, stages, reader, batch, site)
    return change.skipped("its CsvDataset was not found again")


def _rewrite_csv(graph: PipelineGraph, change: Change) -> None:
    site = next((site for reader, _, site in batch_csv.find(graph, graph.stages()) if reader.node == change.node), None)
    if not isinstance(site, batch_csv.CsvSite):
        raise GraphError(site or "its CsvDataset was not found again")
    batch_csv.rewrite(graph, site)


def plan_tuning(
    dataset,
    facts: rules.TuningFacts,
    *,
    input_batches_per_sec: float | None,
    clock_ns: Callable[[], int] = time.monotonic_ns,
) -> TuningPlan:
    """Decide the changes for the user's pipeline. Never raises for a pipeline whose graph cannot
    be read: the plan then holds only a final prefetch, applied through the Python API."""
    try:
        graph = PipelineGraph.from_dataset(dataset)
        stages = graph.stages()
    except GraphError as error:
        change = Change("prefetch", None, None, "prefetch(AUTOTUNE) at the end", applied=True)
        return TuningPlan(dataset, None, [], facts, [change, rules.threading_change(facts)],
                          notes=[f"graph not editable, options only: {error}"])

    changes: list[Change] = []
    changes += rules.parallel_map_changes(stages, facts)
    changes += rules.interleave_changes(stages)
    changes += _decode_crop_changes(graph, stages)
    csv = _batch_csv_changes(graph, stages)
    changes += csv
    point = rules.cache_point(stages)
    csv_at_point = next((c for c in csv if c.applied and point is not None and c.node == point.stage.node), None)
    cache = None
    if point is not None and point.already_cached:
        changes.append(rules.already_cached_change(point))
    elif point is not None and csv_at_point is not None:
        changes.append(rules.cache_at_csv_reader(point, csv_at_point))
    elif point is not None:
        estimate = _estimate_cache(graph, point, cardinality(dataset), input_batches_per_sec, stages, facts, clock_ns)
        cache = rules.cache_change(point, estimate, facts)
        changes.append(cache)
    chain = [s.node for s in stages]
    changes = [rules.decode_crop_under_cache(c, cache, chain) if c.kind == "decode_crop" else c for c in changes]
    functions = user_functions(dataset)
    draws = _random_draws(graph, stages, functions)
    for change in rules.vectorize_changes(stages, rules.cached_upto(stages, point, cache), draws):
        changes.append(_check_vectorize(graph, change, functions) if change.applied else change)
    changes.append(rules.prefetch_change(stages, facts))
    changes.append(rules.threading_change(facts))
    return TuningPlan(dataset, graph, stages, facts, changes, functions)


def build(plan: TuningPlan, keys: Iterable[str], clock_ns: Callable[[], int] = time.monotonic_ns,
          guard: Callable[..., Any] | None = None) -> TunedPipeline:
    """The user's pipeline with the planned changes named by `keys` (Change.key) applied.

    Order matters only for node names, and splices keep the names upstream of them: in-place
    edits of a stage (parallel map, decode only the crop window, parallel interleave) first, then
    the file interleave, batch-before-map and the CSV read as lines, then the cache (filled here, once, timed), then the
    final prefetch."""
    wanted = set(keys)
    chosen = {c.key: c for c in plan.changes if c.applied and c.key in wanted}
    result: dict[str, Change] = {}

    def outcome(change: Change) -> None:
        result[change.key] = change

    if plan.graph is None:
        tuned = plan.dataset
        if any(c.kind == "prefetch" for c in chosen.values()):
            tuned = tuned.prefetch(tf.data.AUTOTUNE)
        threading = next((c for c in chosen.values() if c.kind == "threading"), None)
        tuned = tuned.with_options(_options(threading is not None))
        return TunedPipeline(tuned, _merge(plan, chosen, chosen), [], None, list(plan.notes))

    graph = plan.graph.copy()
    stages = {s.node: s for s in plan.stages}
    for change in chosen.values():
        if change.kind == "parallel_map":
            _make_parallel_map(graph, change.node)
            outcome(change)
        elif change.kind == "decode_crop":
            across = change.details.get("decode_stage") is not None
            site = decode_crop.find_across(graph, change.node) if across else decode_crop.find_in_stage(graph, change.node)
            if not isinstance(site, (decode_crop.Site, decode_crop.AcrossSite)):
                outcome(change.skipped(site or "its decode_jpeg was not found again"))
                continue
            before = graph.copy()
            try:
                if across:
                    decode_crop.rewrite_across(graph, site)
                    graph.to_dataset()  # it edits several stages: TensorFlow must accept the graph now
                else:
                    decode_crop.rewrite(graph, change.node, site)
                    graph.to_dataset()  # a cond's branches may be rewritten too: TensorFlow must accept it now
            except GraphError as error:
                graph = before
                # tfds' decode could not be moved here; the user can still skip it by hand (decoders=)
                outcome(change.skipped(str(error), by_hand=bool(change.details.get("tfds"))))
            else:
                outcome(change)
        elif change.kind == "interleave" and stages[change.node].kind == "interleave":
            _make_parallel_interleave(graph, change.node)
            outcome(change)
        elif change.kind == "interleave" and stages[change.node].op == "FlatMapDataset":
            stage = stages[change.node]
            _flat_map_to_interleave(graph, change.node, cycle_length=min(stage.source_files, 2 * plan.facts.cores))
            outcome(change)
    for change in chosen.values():
        try:
            if change.kind == "interleave" and change.key not in result:
                transform = _file_interleave(graph, stages[change.node], plan.facts.cores)
                graph.splice_over(change.node, transform, "interleave", keep_upstream=False)
                outcome(change)
            elif change.kind == "vectorize_map" and change.details.get("form") == "csv":
                before = graph.copy()
                try:
                    _rewrite_csv(graph, change)
                    graph.to_dataset()  # it edits several stages: TensorFlow must accept the graph now
                except GraphError:
                    graph = before
                    raise
                outcome(change)
            elif change.kind == "vectorize_map":
                _vectorize(graph, change, plan.functions)
                outcome(change)
        except GraphError as error:
            outcome(change.skipped(str(error)))

    cache_fill_ns = None
    cache = next((c for c in chosen.values() if c.kind == "cache"), None)
    if cache is not None:
        if cache.node not in graph.nodes:
            outcome(cache.skipped("its stage was rewritten by another change"))
        else:
            without_cache = graph.copy()
            cached = graph.splice_over(cache.node, lambda d: d.cache(), "cache")
            limit_s = 2 * plan.facts.fill_budget_seconds
            cache_fill_ns, why = fill_cache(graph.cut(cached), limit_s, plan.facts.ram_budget_bytes, clock_ns,
                                            guard=guard)
            if cache_fill_ns is None:
                graph = without_cache
                outcome(cache.skipped(why))
            else:
                outcome(Change(**{**cache.to_dict(), "details": {**cache.details, "fill_ns": cache_fill_ns}}))

    prefetch = next((c for c in chosen.values() if c.kind == "prefetch"), None)
    if prefetch is not None:
        graph.splice_over(graph.output, lambda d: d.prefetch(tf.data.AUTOTUNE), "prefetch")
        outcome(prefetch)
    threading = next((c for c in chosen.values() if c.kind == "threading"), None)
    if threading is not None:
        outcome(threading)
    tuned = graph.to_dataset().with_options(_options(threading is not None))
    return TunedPipeline(tuned, _merge(plan, chosen, result), plan.stages, cache_fill_ns, list(plan.notes))


def _merge(plan: TuningPlan, chosen: dict[str, Change], result: dict[str, Change]) -> list[Change]:
    """Every planned change, marked applied only where this build applied it."""
    out = []
    for c in plan.changes:
        if c.key in result:
            out.append(result[c.key])
        elif c.applied and c.key not in chosen:
            out.append(c.skipped("not part of this variant"))
        else:
            out.append(c)
    return out


def tune(
    dataset,
    facts: rules.TuningFacts,
    *,
    input_batches_per_sec: float | None,
    clock_ns: Callable[[], int] = time.monotonic_ns,
) -> TunedPipeline:
    """The user's pipeline with every change the rules allow, applied together."""
    plan = plan_tuning(dataset, facts, input_batches_per_sec=input_batches_per_sec, clock_ns=clock_ns)
    return build(plan, [c.key for c in plan.candidates], clock_ns)


def _batch_args(graph: PipelineGraph, batch_node: str) -> tuple[int, bool]:
    inputs = graph.data_inputs(batch_node)
    size = graph.const_value(inputs[1])
    drop = graph.const_value(inputs[-1])
    if size is None or drop is None:
        raise GraphError("the batch size or drop_remainder of the batch stage is not a constant")
    return int(size), bool(drop)


def _vectorized(function: UserFunction, batch_size: int, drop_remainder: bool) -> Callable[[object], object]:
    def transform(ds):
        return ds.batch(batch_size, drop_remainder=drop_remainder).map(
            function.python, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
        )

    return transform


def _map_function(graph: PipelineGraph, change: Change, functions: dict[str, UserFunction]) -> UserFunction:
    names = graph.node_functions(change.node)
    function = next((functions[n] for n in names if n in functions), None)
    if function is None:
        raise GraphError(f"pipediag cannot reach the Python function behind {change.stage} "
                         "(a dataset rebuilt from a graph keeps only the traced function)")
    return function


def _vectorize(graph: PipelineGraph, change: Change, functions: dict[str, UserFunction]) -> None:
    """Batch first, then the user's function on whole batches, where map(f) → batch(n) was."""
    function = _map_function(graph, change, functions)
    batch_node = change.details["batch_node"]
    size, drop = _batch_args(graph, batch_node)
    base = graph.data_inputs(change.node)[0].split(":")[0]
    graph.splice(base, batch_node, _vectorized(function, size, drop), "vectorize",
                 structure=function.input_structure)


def _random_draws(graph: PipelineGraph, stages: list[Stage], functions: dict[str, UserFunction]) -> dict[str, str | None]:
    """For each random map right before a batch: why its draws are per call, None when each is
    shaped like its input (traced again for an input of unknown shape, so `tf.shape` stays an op)."""
    out: dict[str, str | None] = {}
    for s, after in zip(stages, stages[1:]):
        if not s.is_random or s.kind not in ("map", "parallel_map") or after.kind != "batch":
            continue
        function = next((functions[n] for n in graph.node_functions(s.node) if n in functions), None)
        if function is not None:
            out[s.node] = per_call_draws(function)
    return out


def _check_vectorize(graph: PipelineGraph, change: Change, functions: dict[str, UserFunction]) -> Change:
    """Does the user's function give the same values on whole batches? Checked on the first
    few batches' worth of the real input to the map, taken once and cached, so both versions see
    the same elements even when the pipeline upstream is random."""
    try:
        function = _map_function(graph, change, functions)
        size, drop = _batch_args(graph, change.details["batch_node"])
        base = graph.data_inputs(change.node)[0].split(":")[0]
        sample = graph.cut(base, function.input_structure).take(VECTORIZE_CHECK_BATCHES * size).cache()
        # Fill the cache (both versions below read these same elements); an abandoned fill is discarded.
        if _take_all(sample, VECTORIZE_CHECK_SECONDS) is None:
            return change.skipped(f"checking it would take over {VECTORIZE_CHECK_SECONDS:.0f} s (slow input to the map)")
        per_element = sample.map(function.python).batch(size, drop_remainder=drop)
        batched = _vectorized(function, size, drop)(sample)
        if not batched.element_spec == per_element.element_spec and not _compatible(
                batched.element_spec, per_element.element_spec):
            return change.skipped(f"on a batch, {change.details['function']} gives differently shaped results")
        expected = _take_all(per_element, VECTORIZE_CHECK_SECONDS)
        if expected is None:
            return change.skipped(f"checking it would take over {VECTORIZE_CHECK_SECONDS:.0f} s (a slow function)")
        got = list(batched)
    except GraphError as error:
        return change.skipped(str(error))
    except (tf.errors.OpError, ValueError, TypeError) as error:
        first = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        return change.skipped(f"{change.details['function']} does not accept a batch: {type(error).__name__}: {first}")
    if change.details.get("draws") == "per_element":
        again = _take_all(per_element, VECTORIZE_CHECK_SECONDS)
        verdict = None if again is None else compare_random_values(expected, again, got)
        if verdict is None:
            return change.skipped(f"on a batch, {change.details['function']} gives other shapes, or other values "
                                  "where its draws do not reach, than element by element")
        verdict = f"draws shaped like the input (one per element either way); {verdict}"
    else:
        verdict = compare_values(expected, got)
    if verdict is None:
        return change.skipped(f"on a batch, {change.details['function']} gives different values than element by element")
    n = len(expected)
    check = f"checked on the first {n} batch(es) of real input: {verdict}"
    return Change(**{**change.to_dict(), "details": {**change.details, "batch_size": size, "check": check}})


def _take_all(dataset, limit_s: float) -> list | None:
    """Every element of a (short) dataset, or None when that takes longer than limit_s."""
    start = time.monotonic()
    out = []
    for element in dataset:
        out.append(element)
        if time.monotonic() - start > limit_s:
            return None
    return out


def _compatible(a, b) -> bool:
    try:
        tf.nest.assert_same_structure(a, b)
    except (TypeError, ValueError):
        return False
    return all(x.is_compatible_with(y) for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)))


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
        for _ in iterator:
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


def _options(latency: bool):
    options = tf.data.Options()
    options.autotune.enabled = True
    if latency:
        options.threading.private_threadpool_size = rules.LATENCY_THREADPOOL_SIZE
    return options
