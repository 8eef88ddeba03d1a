"""What a tf.data service processing mode means for which examples training sees, and how often.

Said in terms of the user's own pipeline: its length, its source, whether it shuffles and batches.
Pure: it reads the stages, never TensorFlow.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipediag.records.stage import Stage

PROCESSING_MODES = ("parallel_epochs", "distributed_epoch")
SPLITTABLE_SOURCES = {"TensorSliceDataset", "RangeDataset", "TFRecordDataset", "TFRecordDatasetV2",
                      "TextLineDataset", "FixedLengthRecordDataset", "FixedLengthRecordDatasetV2",
                      "ListFilesDataset", "TensorDataset"}


def _workers(n: int | None) -> str:
    return "N workers" if n is None else f"{n} worker{'s' if n != 1 else ''}"


def visitation(processing_mode: str, workers: int | None, cardinality: int | str | None,
               stages: Sequence[Stage]) -> tuple[str, ...]:
    """Plain sentences on data visitation under `processing_mode` with `workers` workers."""
    shuffles = any(s.kind == "shuffle" for s in stages)
    batches = any(s.kind in ("batch", "map_and_batch") for s in stages)
    finite = isinstance(cardinality, int)
    n = _workers(workers)
    lines: list[str] = []
    if processing_mode == "parallel_epochs":
        lines.append(
            "parallel_epochs: every worker runs your whole pipeline on its own; training receives "
            "their batches interleaved, in no fixed order"
        )
        if finite:
            lines.append(
                f"your dataset has {cardinality} batches per pass: with {n} the job delivers "
                f"{'N' if workers is None else workers} × {cardinality} batches before it ends, so each example "
                "is seen once per worker in what your loop calls one epoch"
            )
        else:
            lines.append(
                f"your dataset is {cardinality or 'of unknown length'}: the job does not end by itself; "
                f"with {n}, each example comes around about {'N' if workers is None else workers} times as often "
                "per step count as from a single pipeline — count steps, not epochs"
            )
        if shuffles:
            lines.append(
                "your pipeline shuffles: leave its seed unset so that workers shuffle differently; with a fixed "
                "seed every worker sends the same order, and copies of an example arrive close together"
            )
        else:
            lines.append(
                "your pipeline does not shuffle: every worker produces the same order, so copies of each batch "
                "reach training close together; shuffle (seed unset) before batching"
            )
    elif processing_mode == "distributed_epoch":
        lines.append(
            "distributed_epoch: the source is split among the workers (dynamic sharding); each example is "
            "produced once per pass, by whichever worker took its split, in an order that varies from run to run"
        )
        lines.append("a worker that fails loses the elements it had in flight: each example at most once per pass")
        source = stages[0] if stages else None
        if source is not None and source.op not in SPLITTABLE_SOURCES:
            lines.append(
                f"your source `{source.label}` ({source.op}) may not be splittable; splittable sources are "
                "from_tensor_slices, range, TFRecordDataset over a list of files and list_files"
            )
        if finite:
            lines.append(f"your dataset has {cardinality} batches per pass: the job ends after one pass, shared by {n}")
        else:
            lines.append(f"your dataset is {cardinality or 'of unknown length'}: splits are handed out without end")
        if shuffles:
            lines.append(
                "your shuffle runs on each worker over the elements of its own splits: a buffer mixes only what "
                "that worker read"
            )
        if batches:
            lines.append(
                "batches are formed on each worker from its own splits: unless batch() drops the remainder, "
                "each worker may send one short batch at the end of a pass"
            )
    else:
        raise ValueError(f"unknown processing mode {processing_mode!r}")
    return tuple(lines)
