"""Proving a patch (TensorFlow side): the patched builder is imported, its graph must have the tuned
stages each edit promised, and `compare` measures it against the original, feeding the same step.

The patched source is imported from a hidden sibling of the user's file (so its own imports of
neighbouring modules work), never by writing the user's file. A cache the patch adds is filled
once before the comparison, as the tuned mode fills its own: training fills it in the first epoch,
and a comparison whose turns are shorter than an epoch would otherwise never see it filled (a
cache whose first pass is abandoned is discarded).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pipediag.patch.source import THREADPOOL_DEFAULT, Edit, Patch
from pipediag.records.stage import Stage
from pipediag.results.compare import Comparison

CACHE_FILL_LIMIT_S = 300.0


@dataclass(frozen=True)
class StageCheck:
    kind: str
    stage: str | None
    ok: bool
    text: str


@dataclass(frozen=True)
class Proof:
    checks: tuple[StageCheck, ...]
    comparison: Comparison | None  # patched (B) over original (A); None when not run
    cache_fill_ms: float | None = None

    @property
    def stages_ok(self) -> bool:
        return all(c.ok for c in self.checks)


@contextlib.contextmanager
def patched_builder(patch: Patch) -> Iterator[Callable[..., Any]]:
    """The patched builder function, imported from a hidden sibling file removed afterwards."""
    from pipediag.builder import target as targets

    folder, name = os.path.split(os.path.abspath(patch.path))
    hidden = os.path.join(folder, f".pipediag_patched_{name}")
    with open(hidden, "w", encoding="utf-8") as f:
        f.write(patch.patched)
    try:
        yield targets.load_callable(f"{hidden}:{patch.function}")
    finally:
        os.unlink(hidden)
        sys.modules.pop("pipediag_user_" + os.path.splitext(os.path.basename(hidden))[0], None)


def _plain(label: str | None) -> str | None:
    """A label with its parallel form folded in: `parallel_map(f)` -> `map(f)`."""
    if label is None:
        return None
    for parallel, serial in (("parallel_map(", "map("), ("parallel_interleave(", "interleave(")):
        if label.startswith(parallel):
            return serial + label[len(parallel):]
    return label


def _find(stages: list[Stage], label: str | None) -> Stage | None:
    plain = _plain(label)
    return next((s for s in stages if _plain(s.label) == plain), None)


def _after(stages: list[Stage], stage: Stage) -> Stage | None:
    """The next stage that does work (prefetch and options stages skipped)."""
    return next((s for s in stages if s.index > stage.index and s.kind not in ("prefetch", "options")), None)


def check_stage(edit: Edit, stages: list[Stage], threadpool_size: int | None,
                ops_of: Callable[[Stage], set[str]] | None = None) -> StageCheck:
    """Does the patched pipeline have the stage this edit promised? `ops_of` gives the ops a
    stage's functions run (PipelineGraph.function_ops), for the edits inside a function."""
    def result(ok: bool, text: str) -> StageCheck:
        return StageCheck(edit.kind, edit.stage, ok, text)

    if edit.kind == "threading":
        ok = threadpool_size is not None and threadpool_size >= THREADPOOL_DEFAULT
        return result(ok, f"options: private thread pool of {threadpool_size or 'default'} threads")
    if edit.kind == "prefetch":
        last = next((s for s in reversed(stages) if s.kind != "options"), None)
        return result(last is not None and last.kind == "prefetch", f"ends with {last.label if last else 'nothing'}")
    stage = _find(stages, edit.stage)
    if edit.kind == "interleave" and stage is None:  # a reader or flat_map that became a parallel interleave
        reader = next((s for s in stages if s.kind == "parallel_interleave"), None)
        return result(reader is not None, f"{reader.label} [{reader.op}]" if reader else "no parallel interleave")
    if stage is None:
        return result(False, f"no stage `{edit.stage}` in the patched pipeline")
    if edit.kind in ("parallel_map", "interleave"):
        ok = stage.kind in ("parallel_map", "parallel_interleave") and stage.parallelism == -1
        return result(ok, f"{stage.label} [{stage.op}], parallelism {stage.parallelism}")
    if edit.kind in ("cache", "snapshot"):
        nxt = _after(stages, stage)
        return result(nxt is not None and nxt.kind == edit.kind,
                      f"{stage.label} is followed by {nxt.label if nxt else 'nothing'}")
    if edit.kind == "decode_crop":
        ops = ops_of(stage) if ops_of is not None else None
        if ops is None:
            return result(False, f"{stage.label}: its functions' ops are not known")
        ok = "DecodeAndCropJpeg" in ops and "DecodeJpeg" not in ops
        return result(ok, f"{stage.label} runs " + ", ".join(sorted(ops & {"DecodeAndCropJpeg", "DecodeJpeg"})))
    if edit.kind == "vectorize_map":
        before = next((s for s in reversed(stages) if s.index < stage.index and s.kind not in ("prefetch", "options")),
                      None)
        return result(before is not None and before.kind == "batch",
                      f"{stage.label} follows {before.label if before else 'nothing'}")
    return result(False, f"{edit.kind}: no check")


def stage_ops(graph) -> Callable[[Stage], set[str]] | None:
    """The ops each stage's functions run, nested functions included; None without a graph."""
    if graph is None:
        return None
    return lambda stage: set().union(*(graph.function_ops(f) for f in graph.node_functions(stage.node)))


def fill_caches(dataset, clock_ns: Callable[[], int] = time.monotonic_ns) -> tuple[Any, int | None]:
    """The dataset with every in-memory cache filled by one pass (as the tuned mode fills its own);
    the fill time, or None when there is no cache. Passes that overrun CACHE_FILL_LIMIT_S are
    stopped (the cache is then left to fill during the run)."""
    from pipediag.builder.graph import GraphError, PipelineGraph

    try:
        graph = PipelineGraph.from_dataset(dataset)
        caches = [s for s in graph.stages() if s.kind == "cache"]
    except GraphError:
        return dataset, None
    if not caches:
        return dataset, None
    start = clock_ns()
    for stage in caches:
        for _ in graph.cut(stage.node):
            if (clock_ns() - start) / 1e9 > CACHE_FILL_LIMIT_S:
                return dataset, None
    return graph.to_dataset(), clock_ns() - start


def prove(patch: Patch, original: Callable[..., Any] | Any, *, builder_kwargs: dict[str, Any] | None = None,
          batch_size: int | None = None, batched: bool | None = None, measure: bool = True,
          compare_kwargs: dict[str, Any] | None = None) -> Proof:
    """Check the patched builder's stages, then (measure=True) compare it with `original`.
    compare_kwargs: model/step, plan, labels... as `pipediag.compare` takes them."""
    from pipediag.api.compare import compare
    from pipediag.builder.prepare import prepare_dataset

    with patched_builder(patch) as builder:
        patched = prepare_dataset(builder, builder_kwargs or {}, batch_size, batched, 0, who="the patched dataset")
        threadpool = patched.dataset.options().threading.private_threadpool_size
        checks = tuple(check_stage(e, list(patched.stages), threadpool, stage_ops(patched.graph)) for e in patch.done)
        if not measure:
            return Proof(checks, None)
        dataset, fill_ns = fill_caches(patched.dataset)
        base = prepare_dataset(original, builder_kwargs or {}, batch_size, batched, 0).dataset
        comparison = compare(base, dataset, **(compare_kwargs or {}))
    return Proof(checks, comparison, None if fill_ns is None else fill_ns / 1e6)
