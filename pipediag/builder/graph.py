"""The user's pipeline as a graph: read it, list its stages, cut it, edit it, and rebuild it.

tf.data pipelines serialize to a GraphDef (`DatasetToGraphV2`) whose nodes are the
transformations and whose function library holds the user's traced functions (named after the
Python function: `__inference_Dataset_map_decode_example_20`). A GraphDef can be turned back into a
Dataset in the same process (`DatasetFromGraph`), with `tf.py_function` callbacks, lookup tables
and cache resources intact. Everything pipediag changes in a pipeline is an edit of this graph,
never a guess at the user's code.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from pipediag.backends.tf import tf
from pipediag.builder import objects
from pipediag.builder.functions import generator_names
from pipediag.builder.graph_ops import PY_OPS, RANDOM_OPS, WRITE_OPS, WRITE_PREFIXES, as_int, is_random_op
from pipediag.builder.graph_ops import has_shuffle_after as has_shuffle_after
from pipediag.errors import PipediagError
from pipediag.records.stage import FILE_READER_OPS, STAGE_KIND_BY_OP, Stage, function_label

_EXTERNAL_STATE_IGNORE = 1  # serialize stateful ops as they are; we rebuild in this same process


class GraphError(PipediagError):
    """The pipeline's graph could not be read or rebuilt (a capture tf.data cannot serialize)."""


class GraphTooLarge(GraphError):
    """The pipeline's graph is over protobuf's 2 GiB: it holds in-memory arrays that large (builder.objects)."""


def _input_name(ref: str) -> str:
    """'node:1' -> 'node'; '^node' -> 'node'."""
    return ref.lstrip("^").split(":")[0]


class PipelineGraph:
    """A mutable copy of a dataset's GraphDef, with the main chain from source to output."""

    def __init__(self, graph_def, element_spec):
        self.graph_def = graph_def
        self.element_spec = element_spec
        self._keep_alive: list[object] = []  # datasets whose resources the graph refers to
        self.generators: dict[str, str] = {}  # graph function -> the user's generator (from_generator)
        self._counter = 0
        self._reindex()

    # -- reading --------------------------------------------------------------------------
    @classmethod
    def from_dataset(cls, dataset, limit_bytes: int | None = None) -> PipelineGraph:
        """limit_bytes: held arrays that reach it are not serialized (default: protobuf's 2 GiB)."""
        limit = objects.GRAPHDEF_LIMIT_BYTES if limit_bytes is None else limit_bytes
        reason = objects.too_large(objects.held_arrays(dataset), limit)
        if reason is not None:
            raise GraphTooLarge(reason)
        try:
            serialized = tf.raw_ops.DatasetToGraphV2(
                input_dataset=dataset._variant_tensor,
                external_state_policy=_EXTERNAL_STATE_IGNORE,
                strip_device_assignment=False,  # stripping leaves py_function with a malformed device
            )
        except (tf.errors.OpError, ValueError, TypeError) as error:
            raise GraphError(f"could not serialize the pipeline's graph: {error}") from error
        graph_def = tf.compat.v1.GraphDef()
        graph_def.ParseFromString(serialized.numpy())
        if not any(node.op == "_Retval" for node in graph_def.node):
            raise GraphTooLarge(objects.EMPTY_GRAPH)
        graph = cls(graph_def, dataset.element_spec)
        graph._keep_alive.append(dataset)
        graph.generators = generator_names(dataset)
        return graph

    def copy(self) -> PipelineGraph:
        other = PipelineGraph(copy.deepcopy(self.graph_def), self.element_spec)
        other._keep_alive = list(self._keep_alive)
        other.generators = dict(self.generators)
        other._counter = self._counter
        return other

    def _reindex(self) -> None:
        self.nodes = {n.name: n for n in self.graph_def.node}
        self.functions = {f.signature.name: f for f in self.graph_def.library.function}
        self._retval = next(n for n in self.graph_def.node if n.op == "_Retval")

    @property
    def output(self) -> str:
        return _input_name(self._retval.input[0])

    def chain(self) -> list[str]:
        """Node names of the main chain, source first: each stage's first input, down to a source."""
        names = []
        name = self.output
        while name in self.nodes:
            names.append(name)
            inputs = [i for i in self.nodes[name].input if not i.startswith("^")]
            if not inputs or not self._is_dataset(_input_name(inputs[0])):
                break
            name = _input_name(inputs[0])
        return names[::-1]

    def _is_dataset(self, name: str) -> bool:
        node = self.nodes.get(name)
        return node is not None and node.op != "Const" and ("Dataset" in node.op or node.op in STAGE_KIND_BY_OP)

    def data_inputs(self, name: str) -> list[str]:
        return [i for i in self.nodes[name].input if not i.startswith("^")]

    def const_value(self, ref: str):
        node = self.nodes.get(_input_name(ref))
        if node is None or node.op != "Const":
            return None
        if node.attr["value"].tensor.dtype in (tf.resource.as_datatype_enum, tf.variant.as_datatype_enum):
            return None
        proto = node.attr["value"].tensor
        try:
            return tf.make_ndarray(proto)
        except (TypeError, ValueError):
            pass
        try:  # strings packed into tensor_content, which make_ndarray cannot read
            return tf.io.parse_tensor(proto.SerializeToString(), out_type=tf.dtypes.as_dtype(proto.dtype)).numpy()
        except (tf.errors.OpError, TypeError, ValueError):
            return None

    def function_ops(self, function_name: str) -> set[str]:
        """Every op a function runs, nested functions (If/While branches, calls) included."""
        seen: set[str] = set()
        ops: set[str] = set()
        todo = [function_name]
        while todo:
            fname = todo.pop()
            if fname in seen or fname not in self.functions:
                continue
            seen.add(fname)
            for node in self.functions[fname].node_def:
                ops.add(node.op)
                if node.op in self.functions:
                    todo.append(node.op)
                for attr in node.attr.values():
                    if attr.HasField("func"):
                        todo.append(attr.func.name)
                    todo.extend(f.name for f in attr.list.func)
        return ops

    def node_functions(self, name: str) -> list[str]:
        node = self.nodes[name]
        names = []
        for key in sorted(node.attr):
            attr = node.attr[key]
            if attr.HasField("func"):
                names.append(attr.func.name)
            names.extend(f.name for f in attr.list.func)
        return names

    def stages(self) -> list[Stage]:
        return [self._stage(i, name) for i, name in enumerate(self.chain())]

    def _stage(self, index: int, name: str) -> Stage:
        node = self.nodes[name]
        kind = STAGE_KIND_BY_OP.get(node.op, "other")
        functions = self.node_functions(name)
        ops: set[str] = {node.op}
        for f in functions:
            ops |= self.function_ops(f)
        inputs = self.data_inputs(name)
        parallelism = None
        buffer_size = None
        if kind in ("map", "interleave", "flat_map", "filter"):
            parallelism = 1
        elif node.op.startswith("ParallelMapDataset") or node.op.startswith("ParallelInterleaveDataset"):
            parallelism = as_int(self.const_value(inputs[-1]))
        elif node.op in ("MapAndBatchDataset", "ExperimentalMapAndBatchDataset"):
            parallelism = as_int(self.const_value(inputs[-2]))
        elif node.op == "LegacyParallelInterleaveDatasetV2":
            parallelism = as_int(self.const_value(inputs[-4]))  # cycle_length: all run in parallel
        if kind in ("batch", "shuffle", "prefetch") and len(inputs) > 1:
            buffer_size = as_int(self.const_value(inputs[1]))
        source_files = reader = None
        if node.op in FILE_READER_OPS:
            files = self.const_value(inputs[0])
            source_files = None if files is None else int(files.size)
            reader = node.op
        elif kind in ("flat_map", "interleave", "parallel_interleave"):
            readers = sorted(ops & FILE_READER_OPS)
            if readers:
                reader = readers[0]
                source_files = self._file_count(inputs[0])
                if kind == "flat_map" and functions and function_label(functions[0]) == "read_one_file":
                    # TFRecordDataset(filenames) is built as from_tensor_slices(filenames).flat_map(read_one_file):
                    # to the user it is one reader reading its files one after another.
                    kind, functions = "source", []
        function = function_label(functions[0]) if functions else None
        if kind == "flat_map" and "GeneratorDataset" in ops:
            # Dataset.from_generator(gen) is built as a flat_map whose function runs a
            # GeneratorDataset that calls back into Python: to the user it is their generator.
            kind = "from_generator"
            function = self.generators.get(functions[0]) if functions else None
        return Stage(
            index=index,
            node=name,
            op=node.op,
            kind=kind,
            function=function,
            parallelism=parallelism,
            is_random=bool(ops & RANDOM_OPS) or any(is_random_op(o) for o in ops),
            fixed_order=self._fixed_order(node, kind, functions),
            has_py_function=bool(ops & PY_OPS),
            writes_state=any(o in WRITE_OPS or o.startswith(WRITE_PREFIXES) for o in ops),
            source_files=source_files,
            buffer_size=buffer_size,
            reader=reader,
        )

    def _fixed_order(self, node, kind: str, functions: list[str]) -> bool:
        """A shuffle that does not reshuffle (`reshuffle_each_iteration=False`): every epoch, and
        every iterator of the dataset, sees the order its first epoch drew. Not a shuffle that also
        repeats (its repeat makes the pipeline endless) and not one whose op says nothing."""
        if kind != "shuffle" or functions or node.op.startswith("ShuffleAndRepeat"):
            return False
        return "reshuffle_each_iteration" in node.attr and not node.attr["reshuffle_each_iteration"].b

    def _file_count(self, name: str) -> int | None:
        """Number of file names a TensorSliceDataset of strings hands to a reader stage."""
        node = self.nodes.get(_input_name(name))
        if node is None or node.op != "TensorSliceDataset":
            return None
        value = self.const_value(self.data_inputs(node.name)[0])
        if value is None or value.dtype.kind not in ("S", "O", "U") or value.ndim == 0:
            return None
        return int(value.shape[0])

    # -- rebuilding -----------------------------------------------------------------------
    def to_dataset(self):
        """The pipeline as a Dataset again, with the original element structure."""
        return self._build(self.graph_def, self.element_spec)

    def cut(self, name: str, structure=None):
        """The pipeline up to and including `name`, as a Dataset: of flat tensors, or of
        `structure` (an element spec) when the caller knows how that stage's elements nest."""
        graph = self.copy()
        graph._retval.input[0] = name
        graph._gc()
        return self._build(graph.graph_def, self.flat_spec(name) if structure is None else structure)

    def upstream(self, name: str) -> list[str]:
        """The main chain from the source up to and including `name`."""
        chain = self.chain()
        if name not in chain:
            raise GraphError(f"{name} is not on the pipeline's main chain")
        return chain[: chain.index(name) + 1]

    def flat_spec(self, name: str):
        node = self.nodes[name]
        # Reading a missing key of a proto map would insert it; TensorSliceDataset says Toutput_types.
        type_key = "output_types" if "output_types" in node.attr else "Toutput_types"
        if type_key not in node.attr or "output_shapes" not in node.attr:
            raise GraphError(f"{node.op} does not declare its output types")
        types = list(node.attr[type_key].list.type)
        shapes = list(node.attr["output_shapes"].list.shape)
        specs = tuple(
            tf.TensorSpec(tf.TensorShape(shape), tf.dtypes.as_dtype(dtype)) for dtype, shape in zip(types, shapes)
        )
        return specs[0] if len(specs) == 1 else specs

    def _build(self, graph_def, spec):
        try:
            variant = tf.raw_ops.DatasetFromGraph(graph_def=graph_def.SerializeToString())
            dataset = tf.data.experimental.from_variant(variant, structure=spec)
        except (tf.errors.OpError, ValueError, TypeError) as error:
            raise GraphError(f"could not rebuild the pipeline from its graph: {error}") from error
        # Options set with with_options() live in the graph; the Python object must exist to keep
        # resources (caches, tables) referenced by the graph alive while the dataset is used.
        dataset._pipediag_keep_alive = list(self._keep_alive)
        return dataset

    # -- editing --------------------------------------------------------------------------
    def fresh_name(self, prefix: str) -> str:
        while True:
            self._counter += 1
            name = f"pipediag/{prefix}_{self._counter}"
            if name not in self.nodes:
                return name

    def add_const(self, value, dtype) -> str:
        name = self.fresh_name("Const")
        tensor = tf.make_tensor_proto(value, dtype=dtype)
        node = self.graph_def.node.add()
        node.name = name
        node.op = "Const"
        node.attr["value"].tensor.CopyFrom(tensor)
        node.attr["dtype"].type = tensor.dtype
        self.nodes[name] = node
        return name

    def add_function(self, function) -> None:
        """Add a function (a rewritten copy of one of the user's) to the graph's library."""
        if function.signature.name in self.functions:
            raise GraphError(f"the pipeline's graph already has a function named {function.signature.name}")
        self.graph_def.library.function.add().CopyFrom(function)
        self._reindex()

    def consumers(self, name: str) -> list[tuple[object, int]]:
        return [
            (node, i)
            for node in self.graph_def.node
            for i, ref in enumerate(node.input)
            if not ref.startswith("^") and _input_name(ref) == name
        ]

    def splice_over(self, name: str, transform: Callable[[object], object], label: str,
                    keep_upstream: bool = True) -> str:
        """Put `transform(cut at name)` where `name` was: every consumer of `name` now reads the
        transformed output. Returns the new node's name. Used to insert cache, prefetch, or any
        transformation the tf.data Python API can express."""
        return self.splice(name, name, transform, label, keep_upstream=keep_upstream)

    def splice(self, base: str, replace: str, transform: Callable[[object], object], label: str, *,
               structure=None, keep_upstream: bool = True) -> str:
        """Every consumer of `replace` reads `transform(cut at base)` instead; stages between
        `base` and `replace` drop out. Returns the new output node's name.

        keep_upstream: the transform builds on the dataset it is given, so the pipeline up to
        `base` keeps its nodes (and their names: later edits can still find them) and only the
        new nodes are copied in. False: the transform replaces everything up to `replace` (e.g.
        a file reader rebuilt as an interleave), and its whole graph is copied in.
        """
        ours = self.upstream(base)
        changed = transform(self.cut(base, structure))
        self._keep_alive.append(changed)
        other = PipelineGraph.from_dataset(changed)
        barrier = None
        if keep_upstream:
            theirs = other.chain()
            same = len(theirs) > len(ours) and [self.nodes[n].op for n in ours] == [
                other.nodes[n].op for n in theirs[: len(ours)]
            ]
            if not same:
                raise GraphError(f"the {label} transformation does not build on the pipeline it was given")
            barrier = theirs[len(ours) - 1]
        new_nodes = other._ancestors(other._retval.name, barrier)
        prefix = self.fresh_name(label)
        renamed = {n: f"{prefix}/{n}" for n in new_nodes if other.nodes[n].op != "_Retval"}
        if barrier is not None:
            renamed[barrier] = base
        for node in other.graph_def.node:
            if node.name not in new_nodes or node.op == "_Retval":
                continue
            new = self.graph_def.node.add()
            new.CopyFrom(node)
            new.name = renamed[node.name]
            del new.input[:]
            for ref in node.input:
                control = ref.startswith("^")
                base_name = _input_name(ref)
                suffix = ref.lstrip("^")[len(base_name) :]  # ":1" output index, if any
                new.input.append(("^" if control else "") + renamed.get(base_name, base_name) + suffix)
        for function in other.graph_def.library.function:
            if function.signature.name not in self.functions:
                self.graph_def.library.function.add().CopyFrom(function)
        for gradient in other.graph_def.library.gradient:
            self.graph_def.library.gradient.add().CopyFrom(gradient)
        new_output = renamed[other.output]
        for node, i in self.consumers(replace):
            if node.name.startswith(prefix + "/"):
                continue
            node.input[i] = new_output
        self._reindex()
        self._gc()
        return new_output

    def _ancestors(self, start: str, barrier: str | None) -> set[str]:
        """`start` and every node it depends on, not looking past `barrier` (which is left out)."""
        seen: set[str] = set()
        todo = [start]
        while todo:
            name = todo.pop()
            if name in seen or name == barrier or name not in self.nodes:
                continue
            seen.add(name)
            todo.extend(_input_name(ref) for ref in self.nodes[name].input)
        return seen

    def _gc(self) -> None:
        """Drop the nodes the output no longer depends on."""
        keep: set[str] = set()
        todo = [self._retval.name]
        by_name = {n.name: n for n in self.graph_def.node}
        while todo:
            name = todo.pop()
            if name in keep or name not in by_name:
                continue
            keep.add(name)
            todo.extend(_input_name(ref) for ref in by_name[name].input)
        survivors = [n for n in self.graph_def.node if n.name in keep]
        del self.graph_def.node[:]
        self.graph_def.node.extend(survivors)
        self._reindex()

