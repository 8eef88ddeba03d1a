"""The tuned pipeline's edits of one stage's node: a parallel map, a parallel interleave, files read by an
interleave instead of one after another, an epoch repeat taken out (to go back in after a cache)."""

from __future__ import annotations

from collections.abc import Callable

from pipediag.backends.tf import tf
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.records.stage import Stage


def make_parallel_map(graph: PipelineGraph, node_name: str) -> None:
    node = graph.nodes[node_name]
    controls = [i for i in node.input if i.startswith("^")]
    data = [i for i in node.input if not i.startswith("^")]
    npc = graph.add_const(-1, tf.int64)
    node.op = "ParallelMapDatasetV2"
    del node.input[:]
    node.input.extend(data + [npc] + controls)
    if "force_synchronous" in node.attr:
        del node.attr["force_synchronous"]
    node.attr["deterministic"].s = b"true"


def make_parallel_interleave(graph: PipelineGraph, node_name: str) -> None:
    node = graph.nodes[node_name]
    controls = [i for i in node.input if i.startswith("^")]
    data = [i for i in node.input if not i.startswith("^")]
    extra = [graph.add_const(-1, tf.int64) for _ in range(3)]  # buffer, prefetch, num_parallel_calls
    node.op = "ParallelInterleaveDatasetV4"
    del node.input[:]
    node.input.extend(data + extra + controls)
    node.attr["deterministic"].s = b"true"


def flat_map_to_interleave(graph: PipelineGraph, node_name: str, cycle_length: int) -> None:
    """flat_map over file names (one file after another) -> parallel interleave over them."""
    node = graph.nodes[node_name]
    controls = [i for i in node.input if i.startswith("^")]
    data = [i for i in node.input if not i.startswith("^")]
    extra = [graph.add_const(cycle_length, tf.int64), graph.add_const(1, tf.int64)]  # cycle, block
    extra += [graph.add_const(-1, tf.int64) for _ in range(3)]  # buffer, prefetch, num_parallel_calls
    node.op = "ParallelInterleaveDatasetV4"
    del node.input[:]
    node.input.extend(data + extra + controls)
    node.attr["deterministic"].s = b"true"


def file_interleave(graph: PipelineGraph, stage: Stage, cores: int) -> Callable[[object], object]:
    node = graph.nodes[stage.node]
    inputs = graph.data_inputs(stage.node)
    files = graph.const_value(inputs[0]).reshape(-1)
    compression = graph.const_value(inputs[1])
    buffer_size = graph.const_value(inputs[2])
    compression = compression.decode() if isinstance(compression, bytes) else str(compression)
    buffer_size = int(buffer_size) if buffer_size is not None else None
    if node.op.startswith("TFRecordDataset"):
        def reader(f):
            return tf.data.TFRecordDataset(f, compression_type=compression, buffer_size=buffer_size)
    elif node.op == "TextLineDataset":
        def reader(f):
            return tf.data.TextLineDataset(f, compression_type=compression, buffer_size=buffer_size)
    else:
        raise GraphError(f"{node.op} is not handled by the file interleave")
    cycle = max(1, min(len(files), 2 * cores))

    def transform(_unused):
        return tf.data.Dataset.from_tensor_slices(files).interleave(
            reader, cycle_length=cycle, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
        )

    return transform


def repeat_count(graph: PipelineGraph, node_name: str) -> int:
    """The count of a RepeatDataset node (-1: forever)."""
    value = graph.const_value(graph.data_inputs(node_name)[1])
    if value is None:
        raise GraphError(f"the count of {node_name} is not a constant")
    return int(value)


def without_repeat(graph: PipelineGraph, node_name: str) -> PipelineGraph:
    """A copy of `graph` in which the stage after the repeat `node_name` reads the repeat's input:
    the pipeline's first epoch, which a cache moved before the repeat holds."""
    out = graph.copy()
    if out.nodes[node_name].op != "RepeatDataset":
        raise GraphError(f"{node_name} is not a repeat")
    source = out.data_inputs(node_name)[0]
    for node, i in out.consumers(node_name):
        node.input[i] = source
    return out
