"""Batch before map: the user's function run on whole batches, where it draws random numbers, and a check on
real data that it gives the same values as per element."""

from __future__ import annotations

import time
from collections.abc import Callable

from pipediag.backends.tf import tf
from pipediag.builder.functions import UserFunction, per_call_draws
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.records.change import Change
from pipediag.records.stage import Stage
from pipediag.tuner.checks import compare_random_values, compare_values

VECTORIZE_CHECK_BATCHES = 3
VECTORIZE_CHECK_SECONDS = 5.0  # a check that would take longer is skipped (and said so)


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


def vectorize(graph: PipelineGraph, change: Change, functions: dict[str, UserFunction]) -> None:
    """Batch first, then the user's function on whole batches, where map(f) → batch(n) was."""
    function = _map_function(graph, change, functions)
    batch_node = change.details["batch_node"]
    size, drop = _batch_args(graph, batch_node)
    base = graph.data_inputs(change.node)[0].split(":")[0]
    graph.splice(base, batch_node, _vectorized(function, size, drop), "vectorize",
                 structure=function.input_structure)


def random_draws(graph: PipelineGraph, stages: list[Stage], functions: dict[str, UserFunction]) -> dict[str, str | None]:
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


def check_vectorize(graph: PipelineGraph, change: Change, functions: dict[str, UserFunction]) -> Change:
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
