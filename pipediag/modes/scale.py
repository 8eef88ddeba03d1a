"""Feeding batches through tf.data service (TensorFlow side).

`distribute` sends the user's dataset graph to the dispatcher; the workers rebuild it from that
graph, so they need only TensorFlow, never the user's code. The one thing that cannot travel in
a graph is Python: a `tf.py_function` or `from_generator` stage calls back into the process that
built it, and on a worker in another process or host that callback does not exist. pipediag
refuses such pipelines before starting anything, and names the stage.

Talking to a service can block without a timeout inside TensorFlow (an unreachable dispatcher,
a deployment with no workers), so the first contact runs in a helper thread with a deadline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pipediag.analysis.visitation import PROCESSING_MODES
from pipediag.backends.tf import tf
from pipediag.builder.graph import PipelineGraph
from pipediag.builder.graph_ops import PY_OPS
from pipediag.errors import UsageError
from pipediag.modes.feeds import BatchFeed
from pipediag.records.stage import Stage
from pipediag.service.cluster import ServiceError


def graph_calls_python(graph: PipelineGraph) -> bool:
    """Any op anywhere in the pipeline's graph (side inputs and nested functions included)
    calls back into Python."""
    if any(node.op in PY_OPS for node in graph.graph_def.node):
        return True
    return any(node.op in PY_OPS for f in graph.graph_def.library.function for node in f.node_def)


def refuse_python(stages: Sequence[Stage], graph: PipelineGraph | None) -> None:
    """Raise a UsageError when the pipeline calls Python: remote workers cannot run it."""
    named = [s.label for s in stages if s.has_py_function]
    if not named and (graph is None or not graph_calls_python(graph)):
        return
    where = ", ".join(f"`{label}`" for label in named) if named else "a stage off the main chain"
    raise UsageError(
        f"the pipeline calls Python ({where} uses tf.py_function, tf.numpy_function or from_generator): "
        "tf.data service workers run the pipeline's graph in another process, where that Python "
        "function does not exist",
        "rewrite that stage with TensorFlow ops (tf.io, tf.image, tf.strings) so it lives in the graph; "
        "or read what the Python code produces from files (TFRecord) written beforehand. "
        "In-process workers would run it, but would not take work off this host",
    )


def distribute(dataset, target: str, processing_mode: str, job_name: str | None = None):
    if processing_mode not in PROCESSING_MODES:
        raise UsageError(f"unknown processing mode {processing_mode!r}", f"use one of {', '.join(PROCESSING_MODES)}")
    return dataset.apply(
        tf.data.experimental.service.distribute(processing_mode=processing_mode, service=target, job_name=job_name)
    )


def with_deadline(fn: Callable[[], Any], timeout_s: float, what: str, hint: str,
                  check: Callable[[], None] | None = None) -> Any:
    """Run fn in a helper thread; raise a ServiceError if it has not returned in timeout_s.
    `check` runs while waiting (it may raise, e.g. on a pending interrupt). A call TensorFlow
    never returns from stays behind in its (daemon) thread."""
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn()
        except BaseException as error:  # noqa: BLE001 (handed to the caller's thread, which re-raises it)
            box["error"] = error

    thread = threading.Thread(target=call, name="pipediag-service-contact", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while thread.is_alive() and time.monotonic() < deadline:
        thread.join(min(0.1, max(0.0, deadline - time.monotonic())))
        if check is not None:
            check()
    if thread.is_alive():
        raise ServiceError(f"{what}: no answer from the tf.data service within {timeout_s:.0f} s", hint)
    if "error" in box:
        raise box["error"]
    return box["value"]


def open_feed(dataset, target: str, processing_mode: str, batch_format: str, timeout_s: float,
              check: Callable[[], None] | None = None) -> BatchFeed:
    """A feed of the dataset through the service, with its first batch already received."""

    def contact() -> BatchFeed:
        feed = BatchFeed(distribute(dataset, target, processing_mode), batch_format)
        feed()
        return feed

    try:
        return with_deadline(
            contact, timeout_s, "the first batch through the service",
            "a dispatcher without registered workers hands out no work; check that the workers run "
            "and reach the dispatcher (and that this host reaches the workers' addresses)",
            check,
        )
    except tf.errors.OpError as error:
        raise ServiceError(f"the tf.data service failed to produce a batch: {_first_line(error)}",
                           _hint_for(str(error), processing_mode)) from error


def _first_line(error: BaseException) -> str:
    text = getattr(error, "message", None) or str(error)
    text = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return text[:400]


def _hint_for(message: str, processing_mode: str) -> str:
    lowered = message.lower()
    if "callback" in lowered or "pyfunc" in lowered:
        return "a stage calls Python (tf.py_function, from_generator): workers cannot run it; rewrite it with TF ops"
    if processing_mode == "distributed_epoch" and ("split" in lowered or "shard" in lowered):
        return ("distributed_epoch splits the pipeline's source across workers, and this source cannot be split "
                "(from_tensor_slices, range, TFRecordDataset over a list of files and list_files can); "
                "use --processing-mode parallel_epochs")
    return "see the message above; the workers run the same TensorFlow version as this process"
