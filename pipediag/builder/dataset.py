"""Checking what the builder returned, and taking the first batch (TensorFlow side).

The probe answers: is it a Dataset, is it batched, how long is it, what does a batch hold, and
how long did the first batch take (shuffle buffers and file opening happen there, so it is kept
apart from the steady state).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pipediag.backends.tf import tf
from pipediag.builder.graph import PipelineGraph
from pipediag.errors import UsageError, UserCodeError
from pipediag.records.element import ElementInfo, Leaf

INFINITE = "infinite"
UNKNOWN = "unknown"

_BATCH_OPS = {
    "BatchDataset", "BatchDatasetV2", "ParallelBatchDataset", "PaddedBatchDataset", "PaddedBatchDatasetV2",
    "MapAndBatchDataset", "ExperimentalMapAndBatchDataset", "DenseToSparseBatchDataset",
    "ExperimentalDenseToSparseBatchDataset", "RebatchDataset", "RebatchDatasetV2",
}


def require_dataset(obj: Any, what: str = "dataset builder") -> Any:
    if isinstance(obj, tf.data.Dataset):
        return obj
    got = type(obj).__name__
    hint = "return the tf.data.Dataset itself"
    if got in ("list", "tuple", "ndarray") or hasattr(obj, "__array__"):
        hint += "; wrap in-memory data with tf.data.Dataset.from_tensor_slices(...).batch(N)"
    elif hasattr(obj, "__iter__"):
        hint += "; wrap a Python generator with tf.data.Dataset.from_generator(...)"
    raise UsageError(f"the {what} returned a {got}, not a tf.data.Dataset", hint)


def cardinality(dataset) -> int | str:
    value = int(dataset.cardinality().numpy())
    if value == tf.data.INFINITE_CARDINALITY:
        return INFINITE
    if value == tf.data.UNKNOWN_CARDINALITY:
        return UNKNOWN
    return value


def has_batching(graph: PipelineGraph) -> bool:
    ops = {n.op for n in graph.graph_def.node}
    for name in graph.functions:
        ops |= {n.op for n in graph.functions[name].node_def}
    return bool(ops & _BATCH_OPS)


def path_text(parts: tuple) -> str:
    return "".join(f"[{p!r}]" for p in parts) or "batch"


def describe(element_spec, first_batch) -> ElementInfo:
    spec_leaves = flatten_with_paths(element_spec)
    value_leaves = dict(flatten_with_paths(first_batch))
    leaves = []
    batch_size = None
    total = 0
    for path, spec in spec_leaves:
        value = value_leaves.get(path)
        if isinstance(spec, tf.RaggedTensorSpec):
            kind = "ragged"
        elif isinstance(spec, tf.SparseTensorSpec):
            kind = "sparse"
        elif isinstance(spec, tf.TensorSpec):
            kind = "dense"
        else:
            kind = "other"
        shape = getattr(spec, "shape", None)
        dims = None if shape is None or shape.rank is None else tuple(shape.as_list())
        dtype = getattr(getattr(spec, "dtype", None), "name", type(spec).__name__)
        leaves.append(Leaf(path=path_text(path), kind=kind, dtype=dtype, shape=dims))
        if value is not None:
            total += _nbytes(value)
            if batch_size is None:
                rows = _leading_dim(value)
                batch_size = rows
    return ElementInfo(leaves=tuple(leaves), batch_size=batch_size, batch_bytes=total or None)


def flatten_with_paths(structure) -> list[tuple[tuple, Any]]:
    out: list[tuple[tuple, Any]] = []

    def walk(prefix: tuple, value: Any) -> None:
        if isinstance(value, dict):
            for key in sorted(value):
                walk(prefix + (key,), value[key])
        elif isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            for i, v in enumerate(value):
                walk(prefix + (i,), v)
        elif hasattr(value, "_fields"):  # namedtuple
            for key in value._fields:
                walk(prefix + (key,), getattr(value, key))
        else:
            out.append((prefix, value))

    walk((), structure)
    return out


def _nbytes(value) -> int:
    if isinstance(value, tf.RaggedTensor):
        return _nbytes(value.flat_values) + sum(_nbytes(s) for s in value.nested_row_splits)
    if isinstance(value, tf.SparseTensor):
        return _nbytes(value.values) + _nbytes(value.indices)
    if isinstance(value, tf.Tensor):
        if value.dtype == tf.string:
            return int(tf.reduce_sum(tf.strings.length(value)).numpy())
        return int(value.shape.num_elements() or 0) * value.dtype.size
    return 0


def _leading_dim(value) -> int | None:
    shape = getattr(value, "shape", None)
    if shape is None or shape.rank in (None, 0):
        return None
    dim = shape[0]
    return None if dim is None else int(dim)


def common_spec(a: Any, b: Any) -> Any | None:
    """The element spec that both `a` and `b` fit (a dimension they disagree on becomes None), or
    None when no one step could take both: another nesting, other keys, other dtypes."""
    try:
        tf.nest.assert_same_structure(a, b)
    except (ValueError, TypeError):
        return None
    flat = [x.most_specific_common_supertype([y]) for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b))]
    if any(spec is None for spec in flat):
        return None
    return tf.nest.pack_sequence_as(a, flat)


@dataclass(frozen=True)
class FirstBatch:
    batch: Any
    elapsed_ns: int


def take_first_batch(dataset, clock_ns=time.monotonic_ns) -> FirstBatch:
    start = clock_ns()
    try:
        batch = next(iter(dataset))
    except StopIteration:
        raise UsageError(
            "the dataset is empty: it produced no batch at all",
            "check the file pattern, filters, or a drop_remainder batch larger than the data",
        ) from None
    except KeyboardInterrupt:
        raise
    except (Exception, SystemExit) as error:  # sys.exit in their code too: errors.UserCodeError
        raise UserCodeError("pipeline", error, "the error happened while producing the first batch") from error
    return FirstBatch(batch=batch, elapsed_ns=clock_ns() - start)
