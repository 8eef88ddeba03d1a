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
from pipediag.builder.dataset import cardinality
from pipediag.builder.functions import UserFunction, user_functions
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.records.change import Change
from pipediag.records.container import ContainerLimits
from pipediag.records.stage import Stage
from pipediag.samples.container import read_limits
from pipediag.tuner import (
    batch_csv,
    cache_rules,
    csv_scan,
    decode_crop,
    decode_crop_across,
    decode_crop_rewrite,
    decode_reduce,
    rules,
)
from pipediag.tuner.cache_fill import estimate_cache, fill_cache
from pipediag.tuner.graph_edits import (
    file_interleave,
    flat_map_to_interleave,
    make_parallel_interleave,
    make_parallel_map,
    repeat_count,
    without_repeat,
)
from pipediag.tuner.vectorize import VECTORIZE_CHECK_SECONDS, check_vectorize, random_draws, vectorize

_check_vectorize = check_vectorize  # tuned_api.py calls tuning._check_vectorize


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
            across = decode_crop_across.find_across(graph, s.node)
            if isinstance(across, decode_crop.AcrossSite):
                decoder = next(t for t in stages if t.node == across.decode_node)
                changes.append(rules.decode_crop_change(s, None, across.crop_size, decoder, across.tfds, across.feature))
            elif across is not None:
                changes.append(rules.decode_crop_change(s, across))
    return changes


Reads = Callable[[Callable[[], Any], str, float], Any]  # reads(fn, what, budget_s): fn() under a deadline


def _read(reads: Reads | None, fn: Callable[[], Any], what: str, budget_s: float) -> Any:
    """fn(), a read of the user's pipeline or files with its own time budget: under `reads`
    (the stall watchdog, with the budget added to its deadline) when given."""
    return fn() if reads is None else reads(fn, f"tuning: {what}", budget_s)


def _batch_csv_changes(graph: PipelineGraph, stages: list[Stage], reads: Reads | None = None) -> list[Change]:
    """CSV parsed row by row before a batch: parse batches of lines instead (batch_csv)."""
    return [_csv_change(graph, stages, reader, batch, site, reads) for reader, batch, site in batch_csv.find(graph, stages)]


def _csv_change(graph: PipelineGraph, stages: list[Stage], reader: Stage, batch: Stage | None,
                site: batch_csv.CsvSite | str, reads: Reads | None = None) -> Change:
    if isinstance(site, str):
        return rules.batch_csv_change(reader, batch, site)
    between = [s.label for s in stages if s.node in site.between]
    scan = _read(reads, lambda: csv_scan.scan_quoted_newlines(csv_scan.file_names(graph, site), site.use_quote_delim),
                 f"scanning the CSV files {reader.label} reads", 2 * csv_scan.SCAN_SECONDS)
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
    reads: Reads | None = None,
) -> TuningPlan:
    """Decide the changes for the user's pipeline. Never raises for a pipeline whose graph cannot
    be read: the plan then holds only a final prefetch, applied through the Python API.
    `reads(fn, what, budget_s)`: runs each of the plan's reads of the pipeline (the cache's size
    estimate, the CSV scan, the vectorize check) under the stall watchdog, so a read that hangs
    raises `Stalled` instead of hanging."""
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
    changes += [decode_reduce.change_for(s, found) for s in stages if s.kind in ("map", "parallel_map")
                for found in [decode_reduce.find_in_stage(graph, s.node)] if found is not None]
    csv = _batch_csv_changes(graph, stages, reads)
    changes += csv
    point = cache_rules.cache_point(stages)
    csv_at_point = next((c for c in csv if c.applied and point is not None and c.node == point.stage.node), None)
    cache = None
    if point is not None and point.already_cached:
        changes.append(cache_rules.already_cached_change(point))
    elif point is not None and csv_at_point is not None:
        changes.append(cache_rules.cache_at_csv_reader(point, csv_at_point))
    elif point is not None:
        # A cache that takes an epoch repeat's place sizes the first epoch: the graph without the repeat.
        sized = graph if point.repeat is None else without_repeat(graph, point.repeat.node)
        estimate = _read(reads, lambda: estimate_cache(sized, point, cardinality(dataset), input_batches_per_sec, stages,
                                                       facts, clock_ns),
                         f"estimating the size of a cache after {point.stage.label}", facts.fill_budget_seconds)
        cache = cache_rules.cache_change(point, estimate, facts)
        changes.append(cache)
    chain = [s.node for s in stages]
    changes = [rules.decode_crop_under_cache(c, cache, chain) if c.kind == "decode_crop" else c for c in changes]
    functions = user_functions(dataset)
    draws = random_draws(graph, stages, functions)
    # A cache that takes a repeat's place competes with batch-before-map rather than excluding it:
    # for a cheap map the batch is the gain, for a decode the cache; the ablation measures both.
    moved = point is not None and point.repeat is not None
    for change in rules.vectorize_changes(stages, rules.cached_upto(stages, point, None if moved else cache), draws):
        if change.applied:
            change = _read(reads, lambda change=change: check_vectorize(graph, change, functions),
                           f"checking {change.stage} on whole batches", 3 * VECTORIZE_CHECK_SECONDS)
        changes.append(change)
    changes.append(rules.prefetch_change(stages, facts))
    changes.append(rules.threading_change(facts))
    return TuningPlan(dataset, graph, stages, facts, changes, functions)


def build(plan: TuningPlan, keys: Iterable[str], clock_ns: Callable[[], int] = time.monotonic_ns,
          guard: Callable[..., Any] | None = None) -> TunedPipeline:
    """The user's pipeline with the planned changes named by `keys` (Change.key) applied.

    Order matters only for node names, and splices keep the names upstream of them: in-place
    edits of a stage (parallel map, decode only the crop window or at a reduced size, parallel interleave) first, then
    the file interleave, batch-before-map and the CSV read as lines, then the cache (filled here, once, timed), then the
    final prefetch."""
    wanted = set(keys)
    chosen = {c.key: c for c in plan.changes if c.applied and c.key in wanted}
    if plan.graph is None:
        return _build_without_graph(plan, chosen)
    result: dict[str, Change] = {}  # Change.key -> the change as this build applied (or skipped) it
    stages = {s.node: s for s in plan.stages}
    graph = _edit_stages(plan.graph.copy(), plan, chosen, stages, result)
    graph = _splice_stages(graph, plan, chosen, stages, result)
    graph, cache_fill_ns = _add_cache(graph, plan, chosen, clock_ns, guard, result)
    prefetch = next((c for c in chosen.values() if c.kind == "prefetch"), None)
    if prefetch is not None:
        graph.splice_over(graph.output, lambda d: d.prefetch(tf.data.AUTOTUNE), "prefetch")
        result[prefetch.key] = prefetch
    threading = next((c for c in chosen.values() if c.kind == "threading"), None)
    if threading is not None:
        result[threading.key] = threading
    tuned = graph.to_dataset().with_options(_options(threading is not None))
    return TunedPipeline(tuned, _merge(plan, chosen, result), plan.stages, cache_fill_ns, list(plan.notes))


def _build_without_graph(plan: TuningPlan, chosen: dict[str, Change]) -> TunedPipeline:
    """No graph to rewrite: only the final prefetch and the threading options can be applied."""
    tuned = plan.dataset
    if any(c.kind == "prefetch" for c in chosen.values()):
        tuned = tuned.prefetch(tf.data.AUTOTUNE)
    threading = next((c for c in chosen.values() if c.kind == "threading"), None)
    tuned = tuned.with_options(_options(threading is not None))
    return TunedPipeline(tuned, _merge(plan, chosen, chosen), [], None, list(plan.notes))


def _edit_stages(graph: PipelineGraph, plan: TuningPlan, chosen: dict[str, Change], stages: dict[str, Stage],
                 result: dict[str, Change]) -> PipelineGraph:
    """The in-place edits of a stage: parallel map, decode only the crop window, parallel interleave."""
    for change in chosen.values():
        if change.kind == "parallel_map":
            make_parallel_map(graph, change.node)
            result[change.key] = change
        elif change.kind == "decode_crop":
            graph = _apply_decode_crop(graph, change, result)
        elif change.kind == "decode_reduced":
            graph = _apply_decode_reduced(graph, change, result)
        elif change.kind == "interleave" and stages[change.node].kind == "interleave":
            make_parallel_interleave(graph, change.node)
            result[change.key] = change
        elif change.kind == "interleave" and stages[change.node].op == "FlatMapDataset":
            stage = stages[change.node]
            flat_map_to_interleave(graph, change.node, cycle_length=min(stage.source_files, 2 * plan.facts.cores))
            result[change.key] = change
    return graph


def _apply_decode_crop(graph: PipelineGraph, change: Change, result: dict[str, Change]) -> PipelineGraph:
    """Decode only the crop's window, in one stage or across two; the graph as it was if TensorFlow refuses it."""
    across = change.details.get("decode_stage") is not None
    site = decode_crop_across.find_across(graph, change.node) if across else decode_crop.find_in_stage(graph, change.node)
    if not isinstance(site, (decode_crop.Site, decode_crop.AcrossSite)):
        result[change.key] = change.skipped(site or "its decode_jpeg was not found again")
        return graph
    before = graph.copy()
    try:
        if across:
            decode_crop_rewrite.rewrite_across(graph, site)
            graph.to_dataset()  # it edits several stages: TensorFlow must accept the graph now
        else:
            decode_crop_rewrite.rewrite(graph, change.node, site)
            graph.to_dataset()  # a cond's branches may be rewritten too: TensorFlow must accept it now
    except GraphError as error:
        # tfds' decode could not be moved here; the user can still skip it by hand (decoders=)
        result[change.key] = change.skipped(str(error), by_hand=bool(change.details.get("tfds")))
        return before
    result[change.key] = change
    return graph


def _apply_decode_reduced(graph: PipelineGraph, change: Change, result: dict[str, Change]) -> PipelineGraph:
    """Decode at a reduced size before the map's resize; the graph as it was if TensorFlow refuses it."""
    before = graph.copy()
    try:
        decode_reduce.apply(graph, change.node)
    except GraphError as error:
        result[change.key] = change.skipped(str(error))
        return before
    result[change.key] = change
    return graph


def _splice_stages(graph: PipelineGraph, plan: TuningPlan, chosen: dict[str, Change], stages: dict[str, Stage],
                   result: dict[str, Change]) -> PipelineGraph:
    """The splices: the file interleave, the CSV read as lines, batch-before-map; a change TensorFlow
    refuses is skipped with its error."""
    for change in chosen.values():
        try:
            if change.kind == "interleave" and change.key not in result:
                transform = file_interleave(graph, stages[change.node], plan.facts.cores)
                graph.splice_over(change.node, transform, "interleave", keep_upstream=False)
                result[change.key] = change
            elif change.kind == "vectorize_map" and change.details.get("form") == "csv":
                before = graph.copy()
                try:
                    _rewrite_csv(graph, change)
                    graph.to_dataset()  # it edits several stages: TensorFlow must accept the graph now
                except GraphError:
                    graph = before
                    raise
                result[change.key] = change
            elif change.kind == "vectorize_map":
                vectorize(graph, change, plan.functions)
                result[change.key] = change
        except GraphError as error:
            result[change.key] = change.skipped(str(error))
    return graph


def _add_cache(graph: PipelineGraph, plan: TuningPlan, chosen: dict[str, Change], clock_ns: Callable[[], int],
               guard: Callable[..., Any] | None, result: dict[str, Change]) -> tuple[PipelineGraph, int | None]:
    """The cache, filled here once and timed; the graph without it when it cannot be filled in budget."""
    cache = next((c for c in chosen.values() if c.kind == "cache"), None)
    if cache is None:
        return graph, None
    if cache.node not in graph.nodes:
        result[cache.key] = cache.skipped("its stage was rewritten by another change")
        return graph, None
    without_cache = graph.copy()
    repeat = cache.details.get("repeat_node")
    if repeat is not None:  # the repeat moves after the cache: `repeat().map(f)` -> `map(f).cache().repeat()`
        try:
            count = repeat_count(graph, repeat)
            graph = without_repeat(graph, repeat)
        except (GraphError, KeyError) as error:
            result[cache.key] = cache.skipped(f"its repeat could not be moved: {error}")
            return without_cache, None
    cached = graph.splice_over(cache.node, lambda d: d.cache(), "cache")
    limit_s = 2 * plan.facts.fill_budget_seconds
    cache_fill_ns, why = fill_cache(graph.cut(cached), limit_s, plan.facts.ram_budget_bytes, clock_ns, guard=guard)
    if cache_fill_ns is None:
        result[cache.key] = cache.skipped(why)
        return without_cache, None
    if repeat is not None:
        graph.splice_over(cached, lambda d: d.repeat(count), "repeat")
    result[cache.key] = Change(**{**cache.to_dict(), "details": {**cache.details, "fill_ns": cache_fill_ns}})
    return graph, cache_fill_ns


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


def _options(latency: bool):
    options = tf.data.Options()
    options.autotune.enabled = True
    if latency:
        options.threading.private_threadpool_size = rules.LATENCY_THREADPOOL_SIZE
    return options
