"""From the user's builder to a dataset ready to time (TensorFlow side).

Shared by `diagnose` and `compare`: call the builder (passing batch_size when it takes one),
read the pipeline's stages, tell whether a dataset without a batch op yields batches already
(builder.batch_reading), batch one of single examples when asked to (refuse it otherwise, with a
hint), note a dataset too short for warm-up plus measurement, and take the first batch, timed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipediag.backends.tf import tf
from pipediag.builder import target as targets
from pipediag.builder.batch_reading import keras_source, read_shapes, spec_shapes, value_shapes
from pipediag.builder.dataset import (
    FirstBatch,
    cardinality,
    describe,
    has_batching,
    require_dataset,
    take_first_batch,
)
from pipediag.builder.graph import GraphError, GraphTooLarge, PipelineGraph
from pipediag.builder.object_chain import ObjectChain
from pipediag.builder.objects import ADVICE, has_batch_object
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
    # The graph is over 2 GiB (in-memory arrays): the stages and cuts from the Dataset objects instead.
    chain: ObjectChain | None = None


def _read_graph(dataset, notes: list[str]) -> tuple[PipelineGraph | None, list[Stage], bool, bool]:
    """The graph, its stages, whether it batches, and whether it is over 2 GiB (then batching is read
    from the Dataset objects); a graph that cannot be read is a note."""
    try:
        graph = PipelineGraph.from_dataset(dataset)
        return graph, graph.stages(), has_batching(graph), False
    except GraphTooLarge as error:
        notes.append(f"{error}. {ADVICE}")
        return None, [], has_batch_object(dataset), True
    except GraphError as error:
        notes.append(f"the pipeline's graph could not be read, so no stage names or tuning: {error}")
        return None, [], True, False


def prepare_dataset(
    builder: Callable[..., Any] | Any,
    builder_kwargs: dict[str, Any],
    batch_size: int | None,
    batched: bool | None,
    min_batches: int,
    *,
    clock_ns: Callable[[], int] = time.monotonic_ns,
    phase: Callable[[str], None] = lambda text: None,
    who: str = "the dataset",
    guard: Callable[..., Any] | None = None,
    watch: Callable[[PipelineGraph | None, Any], Any] | None = None,
) -> PreparedDataset:
    """`batched`: True, the elements are batches although no batch op is visible; False, they are
    single examples (batched with `batch_size`, else refused); None, read from their shapes
    (builder.batch_reading) where no batch op is visible. `min_batches`: fewer batches than this
    in a finite dataset is said in a note (it is repeated, like an epoch loop, by the feed). `who`
    names the dataset in notes. `guard` (`Watchdog.call`): the first batch is taken under its
    deadline; a `Stalled` it raises carries `.graph` and `.dataset`, so the caller can look for
    the stage that stalls. `watch(graph, dataset)`: the watchdog's `Meanwhile` while the first
    batch is awaited (modes.probe's FirstBatchWatch: it says early where the batch waits)."""
    phase("building the dataset")
    dataset, builder_took_batch_size = _build(builder, builder_kwargs, batch_size)
    notes: list[str] = []
    graph, stages, batching_seen, too_large = _read_graph(dataset, notes)

    def take(data) -> FirstBatch:
        phase("taking the first batch")
        return _first_batch(data, graph, who, clock_ns, guard, watch)

    first = None
    if not batching_seen and batched is not True and not builder_took_batch_size:
        dataset, first = _batches_or_examples(dataset, batch_size, batched, who, notes, take)
        if first is None:  # pipediag added .batch()
            stages = PipelineGraph.from_dataset(dataset).stages() if graph is not None else []
    elif batch_size is not None and not builder_took_batch_size:
        # A batched dataset from a builder without batch_size: the size asked for cannot be set.
        notes.append(f"batch size {batch_size} (--batch-size) was not used: {who} batches itself and its builder "
                     "takes no batch_size; add a batch_size parameter to the builder to set it")

    chain = ObjectChain(dataset) if too_large else None
    stages = chain.stages() if chain is not None else stages
    n = cardinality(dataset)
    if isinstance(n, int) and n < min_batches:
        notes.append(
            f"{who} has only {n} batches, fewer than warm-up plus measurement "
            f"({min_batches}): pipediag repeats it, restarting it like an epoch loop"
        )
    first = first if first is not None else take(dataset)
    return PreparedDataset(
        dataset=dataset, graph=graph, stages=tuple(stages), cardinality=n, first_batch=first.batch,
        first_batch_ns=first.elapsed_ns, element=describe(dataset.element_spec, first.batch), notes=notes,
        chain=chain,
    )


def _build(builder: Callable[..., Any] | Any, builder_kwargs: dict[str, Any], batch_size: int | None
           ) -> tuple[Any, bool]:
    """The dataset, and whether the builder was given a batch_size (by the user or by pipediag)."""
    if isinstance(builder, tf.data.Dataset):
        return builder, False
    kwargs = dict(builder_kwargs)
    if batch_size is not None and "batch_size" not in kwargs and targets.accepts(builder, "batch_size"):
        kwargs["batch_size"] = batch_size
    return require_dataset(targets.call_user(builder, kwargs, "dataset builder")), "batch_size" in kwargs


def _batches_or_examples(dataset, batch_size: int | None, batched: bool | None, who: str, notes: list[str],
                         take: Callable[[Any], FirstBatch]) -> tuple[Any, FirstBatch | None]:
    """A dataset without a visible batch op: its elements read as batches (the dataset as it is,
    and the first batch when one was read to tell), or as examples, batched with `batch_size`
    (the batched dataset, None). Refused when it cannot be batched: no `batch_size`."""
    reading, first = None, None
    if batched is None:
        reading = read_shapes(spec_shapes(dataset.element_spec), source=keras_source(dataset), batch_size=batch_size)
        if reading.needs_element:
            first = take(dataset)  # the first element, timed: the first batch if it is one
            reading = read_shapes(value_shapes(first.batch), source=keras_source(dataset), batch_size=batch_size)
        if reading.batches and (reading.strong or batch_size is None):
            notes.append(reading.note(who))
            if batch_size is not None and batch_size != reading.rows:
                notes.append(f"batch size {batch_size} (--batch-size) was not used: {who}'s elements are batches "
                             "already")
            return dataset, first
    if batch_size is None:
        if reading is None or reading.batches is False:
            what = "yields single examples, not batches: no batch() in the pipeline" + (
                "" if reading is None else f", and {reading.why}")
        else:
            what = ("has no batch() in the pipeline, and pipediag cannot tell single examples from batches in its "
                    f"elements ({reading.why})")
        raise UsageError(
            f"{who} {what}",
            "pass --batch-size N (pipediag adds .batch(N)), add .batch(N) to your builder, "
            "or pass --batched if each element already is a batch",
        )
    notes.append(f"{who} was unbatched: pipediag added .batch({batch_size})")
    if reading is not None and reading.batches:
        notes[-1] += f"; its elements may be batches already ({reading.why}): pass --batched if they are"
    return dataset.batch(batch_size), None


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
