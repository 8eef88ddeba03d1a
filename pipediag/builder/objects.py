"""What the pipeline's Python Dataset objects tell without its graph: the arrays it holds, and
whether it batches.

`from_tensor_slices(x_train)` and `from_tensors(x)` keep their arrays in the dataset, and so does
a `map` function that captures an eager tensor. TensorFlow writes every one of them into the
pipeline's serialized graph as a constant: a source dataset writes its tensors as placeholders
only for tf.data's own graph rewrites (`serialize_data_tensors` off), which `DatasetToGraphV2`
cannot ask for; and a GraphDef, one protobuf message, cannot exceed 2 GiB. Over that,
`DatasetToGraphV2` returns an empty graph. Nor can the rest be read apart from the array: each
stage's dataset is bound to its input's, and only the whole chain serializes. So pipediag sums the
arrays before it serializes, and over the limit it does not try (the attempt alone copies them
once more) and says why. The modes that need no graph still run, and the anatomy reads the stages
from the Dataset objects (`builder.object_chain`).

The Python objects are walked as `builder.functions` walks them: each transformation keeps its
input dataset(s) and function wrappers as attributes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pipediag.backends.tf import tf
from pipediag.records.stage import function_label

GRAPHDEF_LIMIT_BYTES = 2**31 - 1  # protobuf's limit on one serialized message, a GraphDef among them
_LISTED_BYTES = 1 << 20  # arrays under 1 MiB are counted but not named
_SOURCES = {
    "_TensorSliceDataset": "from_tensor_slices",
    "_TensorDataset": "from_tensors",
    "_SparseTensorSliceDataset": "from_sparse_tensor_slices",
}


@dataclass(frozen=True)
class HeldArray:
    """One in-memory tensor the pipeline holds, which its graph would carry as a constant."""

    where: str  # "from_tensor_slices", "from_tensors", "captured by map(augment)"
    dtype: str
    shape: tuple[int, ...]
    nbytes: int

    def text(self) -> str:
        return f"{self.where}: {self.dtype} {self.shape}, {gib(self.nbytes)}"


def gib(n_bytes: int) -> str:
    return f"{n_bytes / 2**30:.2f} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:.1f} MiB"


def dataset_objects(dataset) -> Iterator[Any]:
    """Every Dataset object reachable from `dataset` (its inputs, zipped and concatenated ones), once."""
    seen: set[int] = set()
    todo = [dataset]
    while todo:
        ds = todo.pop()
        if id(ds) in seen:
            continue
        seen.add(id(ds))
        yield ds
        for value in vars(ds).values():
            if isinstance(value, tf.data.Dataset):
                todo.append(value)
            elif isinstance(value, (list, tuple)):
                todo.extend(v for v in value if isinstance(v, tf.data.Dataset))


def _tensors(value) -> Iterator[Any]:
    if isinstance(value, tf.Tensor):
        yield value
    elif isinstance(value, tf.SparseTensor):
        yield from (value.indices, value.values, value.dense_shape)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def _array(where: str, tensor) -> HeldArray | None:
    """Ragged parts travel as variants, whose size is not visible here; resources are handles."""
    if tensor.dtype in (tf.variant, tf.resource) or not tensor.shape.is_fully_defined():
        return None
    if tensor.dtype == tf.string:
        try:
            nbytes = int(tf.reduce_sum(tf.strings.length(tensor)).numpy())
        except (tf.errors.OpError, ValueError, TypeError, AttributeError):  # a symbolic tensor: no value to read
            return None
    else:
        nbytes = int(tensor.shape.num_elements()) * tensor.dtype.size
    return HeldArray(where, tensor.dtype.name, tuple(tensor.shape.as_list()), nbytes)


def _name(traced) -> str:
    name = getattr(traced, "name", "")
    return name.decode() if isinstance(name, bytes) else str(name)


def held_arrays(dataset) -> list[HeldArray]:
    """The tensors the pipeline's Dataset objects hold and its functions capture, largest first."""
    found: list[HeldArray] = []
    for ds in dataset_objects(dataset):
        where = _SOURCES.get(type(ds).__name__, type(ds).__name__.strip("_"))
        for name, value in vars(ds).items():
            if name in ("_variant_tensor_attr", "_graph_attr"):
                continue
            traced = getattr(value, "function", None) if hasattr(value, "_input_structure") else None
            if traced is not None:  # a function wrapper (map, filter, ...): the tensors its function captures
                label = f"captured by {function_label(_name(traced))}"
                found += [a for t in getattr(traced, "captured_inputs", ()) if (a := _array(label, t))]
                continue
            found += [a for t in _tensors(value) if (a := _array(where, t))]
    return sorted(found, key=lambda a: -a.nbytes)


def too_large(held: list[HeldArray], limit_bytes: int) -> str | None:
    """Why the pipeline's graph cannot be serialized, when its arrays alone reach `limit_bytes`; else None."""
    total = sum(a.nbytes for a in held)
    if total < limit_bytes:
        return None
    named = "; ".join(a.text() for a in held if a.nbytes >= _LISTED_BYTES)
    return (f"the pipeline holds {gib(total)} of in-memory arrays ({named}), and TensorFlow writes them into "
            f"the pipeline's graph as constants: a graph cannot exceed {gib(limit_bytes + 1)} (protobuf's limit), "
            "so it cannot be read, cut or rebuilt")


EMPTY_GRAPH = ("TensorFlow returned an empty graph for the pipeline: its serialized graph is over protobuf's 2 GiB "
               "limit (in-memory arrays or tables it holds are written into it as constants), so it cannot be "
               "read, cut or rebuilt")

ADVICE = ("pipediag reads the stages from the Python Dataset objects instead (each object is the pipeline up "
          "to its stage) and times them in the anatomy; the tuned mode, which rewrites the pipeline's graph, "
          "does not run. The array is already in memory: cache() would add nothing. To let pipediag tune the "
          "pipeline (and tf.data service send it), keep the array out of the graph: save the data once with "
          "Dataset.save(path) and read it with Dataset.load(path), or write TFRecord files; or feed it with "
          "Dataset.from_generator over an index (a generator yielding x[i:i + n], y[i:i + n] for i in "
          "range(0, len(x), n): slices cut in NumPy)")


def has_batch_object(dataset) -> bool:
    """Without the graph: whether a Dataset object of the pipeline batches (`_BatchDataset`,
    `_PaddedBatchDataset`, `_ParallelBatchDataset`, `_MapAndBatchDataset`, `_RebatchDataset`, ...;
    `_UnbatchDataset` does not count)."""
    return any("Batch" in type(ds).__name__ for ds in dataset_objects(dataset))
