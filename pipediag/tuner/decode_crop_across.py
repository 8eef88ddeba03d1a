"""A JPEG decoded in an earlier stage and only cropped in a later one: the image traced back from the crop stage,
through stages that pass it on unchanged, to the stage that decodes it (tensorflow-datasets' parse_and_decode included)."""

from __future__ import annotations

from pipediag.backends.tf import tf
from pipediag.builder.graph import PipelineGraph
from pipediag.records.stage import function_label
from pipediag.tuner.decode_crop import (
    DECODE_OPS,
    AcrossSite,
    Hop,
    const_value,
    crop_readers,
    decoder_problem,
    identity_base,
    is_cropped,
    passed_on,
    ref_node,
)

# Stages that hand every element on unchanged (they may drop, repeat or reorder whole elements):
# the image can travel through them as JPEG bytes.
PASS_THROUGH_OPS = (
    "PrefetchDataset", "OptionsDataset", "ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3", "RepeatDataset",
    "TakeDataset", "SkipDataset", "AssertCardinalityDataset", "ModelDataset", "MaxIntraOpParallelismDataset",
    "PrivateThreadPoolDataset", "ShuffleAndRepeatDataset", "ShuffleAndRepeatDatasetV2",
)


MAP_OPS = ("MapDataset", "ParallelMapDataset", "ParallelMapDatasetV2")
TFDS_DECODE_FUNCTION = "parse_and_decode"  # tensorflow_datasets/core/reader.py


def argument_index(function, ref: str) -> int | None:
    names = [a.name for a in function.signature.input_arg]
    name = ref_node(ref)
    return names.index(name) if name in names and ":" not in ref else None


def tfds_feature(function, decode) -> str | None:
    """The tfds feature a parse_and_decode decodes: the DecodeImage reads a (reshaped) dense value
    of ParseExampleV2, whose dense_keys name it."""
    nodes = {n.name: n for n in function.node_def}
    ref = decode.input[0]
    while ref_node(ref) in nodes and nodes[ref_node(ref)].op in ("Reshape", "Identity"):
        ref = nodes[ref_node(ref)].input[0]
    parse = nodes.get(ref_node(ref))
    parts = ref.split(":")
    if parse is None or parse.op != "ParseExampleV2" or len(parts) != 3 or parts[1] != "dense_values":
        return None
    keys = const_value(function, ref_node(parse.input[3]))
    try:
        key = keys.reshape(-1)[int(parts[2])]
    except (AttributeError, IndexError, ValueError):
        return None
    return key.decode() if isinstance(key, bytes) else str(key)


def stage_label(graph: PipelineGraph, node: str) -> str:
    return next((s.label for s in graph.stages() if s.node == node), node)


def find_across(graph: PipelineGraph, crop_node: str) -> AcrossSite | str | None:
    """A JPEG decoded in an earlier stage and only cropped in this one; a reason when the crop
    stage crops an image decoded earlier but the decode cannot move into it; None when the
    stage crops nothing decoded upstream (nothing to say)."""
    chain = graph.chain()
    if crop_node not in chain or graph.nodes[crop_node].op not in MAP_OPS:
        return None
    functions = graph.node_functions(crop_node)
    if len(functions) != 1 or functions[0] not in graph.functions:
        return None
    crop_function = graph.functions[functions[0]]
    candidates = []
    for i, arg in enumerate(crop_function.signature.input_arg):
        if arg.type != tf.uint8.as_datatype_enum:
            continue
        if is_cropped(graph, crop_function, [arg.name]):
            candidates.append(i)
    reasons = []
    for arg_index in candidates:
        found = _trace_back(graph, chain, crop_node, crop_function, arg_index)
        if isinstance(found, AcrossSite):
            return found
        if found is not None:
            reasons.append(found)
    return reasons[0] if reasons else None


def _trace_back(graph, chain, crop_node, crop_function, arg_index) -> AcrossSite | str | None:
    """Follow the crop function's argument back up the chain to the stage that decoded it."""
    blocker = None  # the first reason the decode cannot move here, nearest the crop first
    hops: list[Hop] = []
    index = arg_index  # component index in the output of the stage before `position`
    position = chain.index(crop_node)
    while position > 0:
        position -= 1
        name = chain[position]
        node = graph.nodes[name]
        label = stage_label(graph, name)
        if node.op in PASS_THROUGH_OPS:
            hops.append(Hop(name, index))
            continue
        if node.op in ("CacheDataset", "CacheDatasetV2", "SnapshotDatasetV2"):
            blocker = blocker or (f"{label} between them keeps the decoded images (tensorflow-datasets caches small "
                                  "datasets after decoding): decoded after it, they would be decoded every epoch")
            hops.append(Hop(name, index))
            continue
        if node.op not in MAP_OPS:
            if blocker is None and node.op in ("BatchDatasetV2", "ParallelBatchDataset", "PaddedBatchDatasetV2",
                                               "FilterDataset"):
                blocker = f"{label} between them sees the whole decoded images"
                hops.append(Hop(name, index))
                continue
            return blocker  # cannot follow the image further: say why only if something blocked already
        names = graph.node_functions(name)
        if len(names) != 1 or names[0] not in graph.functions:
            return blocker
        function = graph.functions[names[0]]
        if index >= len(function.signature.output_arg):
            return blocker
        ret_key = function.signature.output_arg[index].name
        base = identity_base(function, function.ret[ret_key])
        source = next((n for n in function.node_def if n.name == ref_node(base)), None)
        if source is not None and source.op in DECODE_OPS:
            rets, _, others = passed_on(function, source.name)
            if others or len(rets) != 1:
                return blocker or f"{label} also uses the whole decoded image (in {', '.join(sorted(set(others))) or 'two outputs'})"
            problem = decoder_problem(source)
            if problem is not None:
                return blocker or problem
            if blocker is not None:
                return blocker
            crop = crop_readers(graph, crop_function, [crop_function.signature.input_arg[arg_index].name])
            if isinstance(crop, str):
                return crop
            is_tfds = function_label(names[0]) == TFDS_DECODE_FUNCTION
            return AcrossSite(
                decode_node=name, decode_function=names[0], decode=source.name, decode_index=index,
                hops=tuple(reversed(hops)), crop_node=crop_node, crop_function=crop_function.signature.name,
                crop_arg=arg_index, shapes=crop.shapes, slices=crop.slices, crop_size=crop.crop_size,
                tfds=is_tfds, feature=tfds_feature(function, source) if is_tfds else None, conds=crop.conds,
            )
        arg = argument_index(function, base)
        if arg is None:
            return blocker  # made in this map, not decoded upstream
        rets, _, others = passed_on(function, function.signature.input_arg[arg].name)
        if (others or len(rets) != 1) and blocker is None:
            blocker = f"{label} also uses the whole decoded image (in {', '.join(sorted(set(others))) or 'two outputs'})"
        hops.append(Hop(name, index, arg, names[0]))
        index = arg
    return blocker
