"""How many batches one pass of a pipeline that caches takes: the warm-up that fills its cache."""

from __future__ import annotations


def cache_pass_batches(prepared) -> int | None:
    """Batches in one pass of a pipeline that caches, so the warm-up can fill the cache once.
    None when there is no cache() stage or its pass length cannot be told."""
    from pipediag.builder.dataset import cardinality

    cache = next((s for s in prepared.stages if s.kind == "cache"), None)
    if cache is None:
        return None
    if isinstance(prepared.cardinality, int):
        return prepared.cardinality
    if prepared.graph is None:
        return None
    try:
        elements = cardinality(prepared.graph.cut(cache.node))
    except Exception:  # noqa: BLE001 - a graph we cannot cut just means we cannot tell
        return None
    if not isinstance(elements, int):
        return None
    batch = next((s for s in prepared.stages if s.kind == "batch" and s.index > cache.index), None)
    per_batch = batch.buffer_size if batch is not None and batch.buffer_size and batch.buffer_size > 0 else 1
    return -(-elements // per_batch)
