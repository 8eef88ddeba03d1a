"""From the user's builder to a dataset ready to time (TensorFlow side).

Shared by `diagnose` and `compare`: call the builder (passing batch_size when it takes one),
read the pipeline's stages, batch an unbatched dataset when asked to (refuse it otherwise, with a
hint), note a dataset too short for warm-up plus measurement, and take the first batch, timed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipediag.backends.tf import tf
from pipediag.builder import target as targets
from pipediag.builder.dataset import cardinality, describe, has_batching, require_dataset, take_first_batch
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.errors import UsageError
from pipediag.records.element import ElementInfo
from pipediag.records.stage import Stage


@dataclass
class PreparedDataset:
    dataset: Any
    graph: PipelineGraph | None  # None when the graph could not be read (no stages, no tuning)
    stages: tuple[Stage, ...]
    cardinality: int | str
    first_batch: Any
    first_batch_ns: int
    element: ElementInfo
    notes: list[str] = field(default_factory=list)


def prepare_dataset(
    builder: Callable[..., Any] | Any,
    builder_kwargs: dict[str, Any],
    batch_size: int | None,
    batched: bool,
    min_batches: int,
    *,
    clock_ns: Callable[[], int] = time.monotonic_ns,
    phase: Callable[[str], None] = lambda text: None,
    who: str = "the dataset",
    guard: Callable[..., Any] | None = None,
    watch: Callable[[PipelineGraph | None, Any], Any] | None = None,
) -> PreparedDataset:
    """`min_batches`: fewer batches than this in a finite dataset is said in a note (it is
    repeated, like an epoch loop, by the feed). `who` names the dataset in notes. `guard`
    (`Watchdog.call`): the first batch is taken under its deadline; a `Stalled` it raises carries
    `.graph` and `.dataset`, so the caller can look for the stage that stalls. `watch(graph,
    dataset)`: the watchdog's `Meanwhile` while the first batch is awaited (modes.probe's
    FirstBatchWatch: it says early where the batch waits)."""
    phase("building the dataset")
    kwargs = dict(builder_kwargs)
    builder_took_batch_size = False
    if isinstance(builder, tf.data.Dataset):
        dataset = builder
    else:
        if batch_size is not None and "batch_size" not in kwargs and targets.accepts(builder, "batch_size"):
            kwargs["batch_size"] = batch_size
            builder_took_batch_size = True
        builder_took_batch_size = builder_took_batch_size or "batch_size" in kwargs
        dataset = require_dataset(targets.call_user(builder, kwargs, "dataset builder"))

    notes: list[str] = []
    try:
        graph = PipelineGraph.from_dataset(dataset)
        stages = graph.stages()
        batching_seen = has_batching(graph)
    except GraphError as error:
        graph, stages, batching_seen = None, [], True
        notes.append(f"the pipeline's graph could not be read, so no stage names or tuning: {error}")
    if not batching_seen and not batched and not builder_took_batch_size:
        if batch_size is None:
            raise UsageError(
                f"{who} yields single examples, not batches: no batch() in the pipeline",
                "pass --batch-size N (pipediag adds .batch(N)), add .batch(N) to your builder, "
                "or pass --batched if each element already is a batch",
            )
        dataset = dataset.batch(batch_size)
        notes.append(f"{who} was unbatched: pipediag added .batch({batch_size})")
        stages = PipelineGraph.from_dataset(dataset).stages() if graph is not None else []
    elif batch_size is not None and not builder_took_batch_size:
        # A batched dataset from a builder without batch_size: the size asked for cannot be set.
        notes.append(f"batch size {batch_size} (--batch-size) was not used: {who} batches itself and its builder "
                     "takes no batch_size; add a batch_size parameter to the builder to set it")

    n = cardinality(dataset)
    if isinstance(n, int) and n < min_batches:
        notes.append(
            f"{who} has only {n} batches, fewer than warm-up plus measurement "
            f"({min_batches}): pipediag repeats it, restarting it like an epoch loop"
        )

    phase("taking the first batch")
    first = _first_batch(dataset, graph, who, clock_ns, guard, watch)
    return PreparedDataset(
        dataset=dataset, graph=graph, stages=tuple(stages), cardinality=n, first_batch=first.batch,
        first_batch_ns=first.elapsed_ns, element=describe(dataset.element_spec, first.batch), notes=notes,
    )


def _first_batch(dataset, graph: PipelineGraph | None, who: str, clock_ns: Callable[[], int],
                 guard: Callable[..., Any] | None, watch: Callable[[PipelineGraph | None, Any], Any] | None):
    """The first batch, timed: under `guard`'s deadline when given, `watch` looking on."""
    if guard is None:
        return take_first_batch(dataset, clock_ns)
    from pipediag.records.stall import Stalled

    try:
        meanwhile = None if watch is None else watch(graph, dataset)
        return guard(lambda: take_first_batch(dataset, clock_ns), f"taking {who}'s first batch", meanwhile=meanwhile)
    except Stalled as stall:
        stall.graph, stall.dataset = graph, dataset
        raise
