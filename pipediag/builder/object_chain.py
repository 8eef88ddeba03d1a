"""The pipeline's stages read from its Python Dataset objects, for a pipeline whose graph cannot be
serialized (an in-memory array over 2 GiB: `builder.objects`).

Each transformation's Python object keeps its input as `_input_dataset`, so the main chain is
there without the graph, and each object *is* the pipeline up to its stage: a cut needs no
rebuilding, and shares the user's arrays instead of copying them. What a stage is comes from the
object's class, named after its op (`_ParallelMapDataset` runs `ParallelMapDatasetV2`), and from
the attributes TensorFlow keeps on it (`_num_parallel_calls`, `_batch_size`, `_buffer_size`, the
function wrappers): private names, so anything missing is left unknown, never guessed. It offers
what the anatomy asks of a `PipelineGraph` (`stages`, `cut`); there is no graph to edit, so no
tuned mode.
"""

from __future__ import annotations

from typing import Any

from pipediag.backends.tf import tf
from pipediag.builder.functions import generator_name
from pipediag.builder.graph_ops import PY_OPS, RANDOM_OPS, WRITE_OPS, WRITE_PREFIXES, as_int, is_random_op
from pipediag.records.stage import STAGE_KIND_BY_OP, Stage, function_label


def _int(value: Any) -> int | None:
    try:
        return as_int(value.numpy() if hasattr(value, "numpy") else value)
    except (ValueError, TypeError, AttributeError):
        return None


def _traced(obj: Any) -> list[Any]:
    """The function wrappers an object holds (map, filter, interleave...): (traced function, Python function)."""
    return [v for v in vars(obj).values() if hasattr(v, "_input_structure") and hasattr(v, "function")]


def _ops(function: Any) -> set[str]:
    """Every op a traced function runs, the functions it calls included."""
    try:
        graph_def = function.graph.as_graph_def()
    except (AttributeError, ValueError, TypeError):
        return set()
    ops = {node.op for node in graph_def.node}
    for nested in graph_def.library.function:
        ops |= {node.op for node in nested.node_def}
    return ops


class ObjectChain:
    """The main chain of a pipeline's Dataset objects, source first, as stages and cuts."""

    def __init__(self, dataset: Any):
        chain = [dataset]
        while isinstance(getattr(chain[-1], "_input_dataset", None), tf.data.Dataset):
            chain.append(chain[-1]._input_dataset)
        self.objects = chain[::-1]
        self.nodes = [f"{i}/{type(obj).__name__.strip('_')}" for i, obj in enumerate(self.objects)]

    def stages(self) -> list[Stage]:
        return [self._stage(i, obj) for i, obj in enumerate(self.objects)]

    def cut(self, node: str, structure: Any = None) -> Any:
        """The pipeline up to and including `node`: the user's own object for that stage."""
        return self.objects[self.nodes.index(node)]

    def _stage(self, index: int, obj: Any) -> Stage:
        op = type(obj).__name__.strip("_")
        kind = STAGE_KIND_BY_OP.get(op, "other")
        wrappers = _traced(obj)
        ops = {op}
        for wrapper in wrappers:
            ops |= _ops(wrapper.function)
        function = None
        if wrappers:
            name = getattr(wrappers[0].function, "name", "")
            function = function_label(name.decode() if isinstance(name, bytes) else str(name))
        parallelism = 1 if kind in ("map", "interleave", "flat_map", "filter") else None
        if kind == "flat_map" and "GeneratorDataset" in ops:  # Dataset.from_generator, as builder.graph reads it
            kind, function = "from_generator", generator_name(wrappers[0]._func) if wrappers else None
        if kind in ("parallel_map", "parallel_interleave"):
            parallelism = _int(getattr(obj, "_num_parallel_calls", None))
        buffer_size = None
        if kind in ("batch", "shuffle", "prefetch"):
            buffer_size = _int(getattr(obj, "_batch_size" if kind == "batch" else "_buffer_size", None))
        fixed = kind == "shuffle" and getattr(obj, "_reshuffle_each_iteration", True) is False
        return Stage(
            index=index, node=self.nodes[index], op=op, kind=kind, function=function, parallelism=parallelism,
            is_random=bool(ops & RANDOM_OPS) or any(is_random_op(o) for o in ops), fixed_order=fixed,
            has_py_function=bool(ops & PY_OPS),
            writes_state=any(o in WRITE_OPS or o.startswith(WRITE_PREFIXES) for o in ops), buffer_size=buffer_size,
        )
