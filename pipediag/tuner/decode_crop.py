"""Decode only the crop window: `decode_jpeg` or `decode_image` followed by a crop becomes
`decode_and_crop_jpeg`.

A map that decodes a whole JPEG and then keeps a window of it (`tf.image.random_crop`, a
`tf.slice`, the inception-style box of `sample_distorted_bounding_box`) pays for every pixel it
throws away. libjpeg can decode just the window
(`tf.image.decode_and_crop_jpeg`); the crop's offset is then computed from the JPEG's header
(`tf.image.extract_jpeg_shape`) instead of from the decoded image. This module finds that pattern
inside the user's traced function and rewrites a copy of it:

    DecodeJpeg(jpeg) ─▶ Shape ─▶ (offset)         ExtractJpegShape(jpeg) ─▶ (offset)
                    └▶ Slice(·, offset, size)   ⇒   Slice(DecodeAndCropJpeg(jpeg, window), offset - start, size)

where `window` is the crop widened by WINDOW_MARGIN_PX on every side (clipped to the image), so
the crop's pixels are exactly those of the full decode. The right-hand side is a helper function
traced here and added to the graph's library (each Shape and crop becomes a call of it): it
checks the file's magic bytes first, and decodes a file that is not a JPEG whole and slices it,
as the original did (decode_jpeg and decode_image also decode PNG and GIF; decode_and_crop_jpeg
does not).

Only where it is provably the same crop: the decoded image feeds nothing but `Shape`, 3-D
`Slice`s of int32 offsets (a size known at run time only included: the helper applies the Slice's
own begin and size, -1 "to the end" resolved from the header) and windows `image[a:b, c:d]`, and
conds (`tf.cond`: If / StatelessIf) whose branch functions do only that with it or leave it
unread (tensorflow/models' parser center-crops the whole image in one branch when the sampled box
is all of it); those branches are rewritten as copies that take the JPEG bytes. The decoder keeps
a fixed channel count, decodes to uint8 and does not downscale (`ratio` 1). The tuned mode's
safety check still compares the first batches of deterministic pipelines, as for every other
change.

Across stages (`find_across`, `rewrite_across`, below): one map decodes the whole JPEG (the
user's, or tensorflow-datasets' own `parse_and_decode`), a later one only crops it; the decode
moves into the crop stage and the stages between carry the JPEG bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pipediag.backends.tf import tf
from pipediag.builder.graph import PipelineGraph
from pipediag.records.stage import function_label

_INT32 = 3  # DataType enum values in NodeDef attrs
_INT64 = 9
_SUFFIX = "_pipediag_decode_crop"
# libjpeg's windowed decode lacks the neighbouring columns for colour upsampling at the window's
# edges (seen: the first and last columns off by up to 76/255). Decoding a window this much wider
# on every side (clipped to the image) and slicing the crop out of it gives the full decode's
# pixels exactly: with no margin 350 of 1372 crops differed (4:2:0 and 4:4:4 JPEGs, smooth and
# noisy, 7 row and 49 column offsets), with 1 column and no row none did; 2 and 2 keeps one
# chroma sample of 2x2 subsampling to spare. tests/tuner/test_decode_crop.py checks offsets.
WINDOW_MARGIN_PX = (2, 2)  # rows, columns: one chroma sample of 2x2 subsampling
NOTHING_TO_CROP = "it decodes no JPEG with decode_jpeg or decode_image and then crops it"


@dataclass(frozen=True)
class Branch:
    """One branch function of a cond that reads the decoded image, and what it does with it."""

    attr: str  # the If node's attribute naming it: "then_branch" or "else_branch"
    function: str
    args: tuple[int, ...]  # its arguments holding the image (unread in a branch that passes the crop on)
    shapes: tuple[str, ...]
    slices: tuple[str, ...]
    conds: tuple["Cond", ...] = ()


@dataclass(frozen=True)
class Cond:
    """A `tf.cond` (an If or StatelessIf node) that takes the decoded image in: both branches only
    take its shape and windows of it (a center crop), or pass something else on (the crop)."""

    node: str
    inputs: tuple[int, ...]  # the node's inputs holding the image (branch argument i - 1)
    branches: tuple[Branch, ...]


@dataclass(frozen=True)
class Site:
    """One decode-then-crop inside a function: the decoder and what reads its image."""

    function: str
    decode: str  # the DecodeJpeg / DecodeImage node
    shapes: tuple[str, ...]  # Shape nodes of the decoded image
    slices: tuple[str, ...]  # Slice (and window StridedSlice) nodes cropping it
    crop_size: tuple[int, int] | None = None  # height, width of the (first) window, when constant
    conds: tuple[Cond, ...] = ()  # conds whose branches take windows of the image (a center crop)
    decoder: str = "decode_jpeg"  # the user's call: decode_jpeg or decode_image
    sampled_box: bool = False  # a crop's window comes from sample_distorted_bounding_box (inception-style)


def _ref_node(ref: str) -> str:
    return ref.lstrip("^").split(":")[0]


def _const(function, name: str):
    """The value of a Const node, or of a Pack of scalar Consts (the strides of `image[a:b, c:d, :]`
    with tensor bounds are packed that way); None for anything else."""
    node = next((n for n in function.node_def if n.name == name), None)
    if node is not None and node.op == "Pack" and node.attr["axis"].i == 0:
        parts = [_const(function, _ref_node(ref)) for ref in node.input if not ref.startswith("^")]
        if parts and all(p is not None and p.ndim == 0 for p in parts):
            return np.stack(parts)
        return None
    if node is None or node.op != "Const":
        return None
    try:
        return tf.make_ndarray(node.attr["value"].tensor)
    except (TypeError, ValueError):
        return None


def _readers(function, name: str) -> list[tuple[object, list[int]]]:
    """The nodes that read `name`'s output, with the input positions where they do."""
    out = []
    for node in function.node_def:
        reads = [i for i, ref in enumerate(node.input) if not ref.startswith("^") and _ref_node(ref) == name]
        if reads:
            out.append((node, reads))
    return out


def find_site(graph: PipelineGraph, function_name: str) -> Site | str:
    """The decode-then-crop in this function, or why there is none to rewrite."""
    function = graph.functions.get(function_name)
    if function is None:
        return "its function is not in the pipeline's graph"
    cropped = [n for n in function.node_def if n.op in DECODE_OPS and _is_cropped(graph, function, [n.name])]
    if not cropped:
        return NOTHING_TO_CROP  # no JPEG decoded, or decoded and used whole (resized, returned)
    if len(cropped) > 1:
        return "it decodes and crops more than one JPEG"
    decode = cropped[0]
    problem = _decoder_problem(decode)
    if problem is not None:
        return problem
    reads = _crop_readers(graph, function, [decode.name])
    if isinstance(reads, str):
        return reads
    return Site(function_name, decode.name, reads.shapes, reads.slices, reads.crop_size, reads.conds,
                decoder="decode_jpeg" if decode.op == "DecodeJpeg" else "decode_image",
                sampled_box=_sampled_box(function, reads.slices))


def _sampled_box(function, slices) -> bool:
    """A crop whose begin comes from sample_distorted_bounding_box (the inception-style crop)."""
    nodes = {n.name: n for n in function.node_def}
    begins = [_ref_node(_identity_base(function, nodes[name].input[1])) for name in slices if nodes[name].op == "Slice"]
    return any(name in nodes and nodes[name].op in BOX_OPS for name in begins)


def find_in_stage(graph: PipelineGraph, node: str) -> Site | str | None:
    """The decode-then-crop in the functions a stage runs; a reason when one decodes and crops a
    JPEG but cannot be rewritten; None when none crops a decoded JPEG (nothing to say)."""
    reasons = []
    for name in graph.node_functions(node):
        found = find_site(graph, name)
        if isinstance(found, Site):
            return found
        if found != NOTHING_TO_CROP:
            reasons.append(found)
    return reasons[0] if reasons else None


def rewrite(graph: PipelineGraph, map_node: str, site: Site) -> str:
    """Rewrite a copy of the site's function in `graph` and point `map_node` at it; returns the
    new function's name. The original function is left as it was (other stages may call it).
    Each crop (and shape) of the decoded image becomes a call of a helper that decodes only the
    window of a JPEG, and the whole image of anything else (see _helper_functions); a cond that
    takes the image in takes the JPEG bytes instead, in rewritten copies of its branches."""
    function = _copy_function(graph, site.function, _SUFFIX)
    decode = type(function.node_def[0])()
    decode.CopyFrom(next(n for n in function.node_def if n.name == site.decode))
    jpeg = decode.input[0]
    nodes = {n.name: n for n in function.node_def}
    for alias in _aliases(function, [site.decode])[1:]:  # Identity copies of the image copy the JPEG now
        nodes[alias].attr["T"].type = _STRING
        if _ref_node(nodes[alias].input[0]) == site.decode:
            nodes[alias].input[0] = jpeg
    _replace_crops(graph, function, decode, site.shapes, site.slices,
                   lambda ref: jpeg if _ref_node(ref) == site.decode else ref, site.conds, _SUFFIX)
    keep = [n for n in function.node_def if n.name != site.decode]
    for node in keep:  # a control dependency on the decoder: nothing to wait for now
        kept = [ref for ref in node.input if ref != "^" + site.decode]
        del node.input[:]
        node.input.extend(kept)
    del function.node_def[:]
    function.node_def.extend(keep)
    graph.add_function(function)
    _point_at(graph, map_node, site.function, function.signature.name)
    return function.signature.name


# -- across stages: one map decodes, a later one crops ---------------------------------------
#
#   map(decode) ─▶ [prefetch, shuffle, maps passing the image on] ─▶ map(crop)
#
# becomes: map(decode) passes the JPEG bytes on (its decoder is removed), the stages between
# carry a string instead of the image, and map(crop) decodes only its window. tensorflow-datasets
# decodes in its own `parse_and_decode` map (a DecodeImage), so a tfds.load(...).map(crop) is
# this case. In the crop stage a helper function (traced here, added to the graph's library)
# replaces the crop: for a JPEG it decodes the window (WINDOW_MARGIN_PX wider) and slices it,
# for anything else (DecodeJpeg and DecodeImage also decode PNG and GIF) it decodes the whole
# image as before and slices it, so no input the original accepted fails in the rewrite.

DECODE_OPS = ("DecodeJpeg", "DecodeImage")
COND_OPS = ("If", "StatelessIf")  # tf.cond; its branches are functions of the graph's library
BOX_OPS = ("SampleDistortedBoundingBox", "SampleDistortedBoundingBoxV2", "StatelessSampleDistortedBoundingBox")
_STRING = 7
# Stages that hand every element on unchanged (they may drop, repeat or reorder whole elements):
# the image can travel through them as JPEG bytes.
PASS_THROUGH_OPS = (
    "PrefetchDataset", "OptionsDataset", "ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3", "RepeatDataset",
    "TakeDataset", "SkipDataset", "AssertCardinalityDataset", "ModelDataset", "MaxIntraOpParallelismDataset",
    "PrivateThreadPoolDataset", "ShuffleAndRepeatDataset", "ShuffleAndRepeatDatasetV2",
)
MAP_OPS = ("MapDataset", "ParallelMapDataset", "ParallelMapDatasetV2")
TFDS_DECODE_FUNCTION = "parse_and_decode"  # tensorflow_datasets/core/reader.py
_SUFFIX_ACROSS = "_pipediag_decode_crop_across"


@dataclass(frozen=True)
class Hop:
    """One stage the image passes through between the decode and the crop stage."""

    node: str
    index: int  # the image's component index in this stage's output
    arg: int | None = None  # for a map: the function's input argument holding the image
    function: str | None = None  # for a map: its function (it passes the image on untouched)


@dataclass(frozen=True)
class AcrossSite:
    """A JPEG decoded in one stage and only cropped in a later one."""

    decode_node: str  # the stage that decodes
    decode_function: str
    decode: str  # its DecodeJpeg / DecodeImage node
    decode_index: int  # the image's component index in the decode stage's output
    hops: tuple[Hop, ...]  # the stages in between, in pipeline order
    crop_node: str
    crop_function: str
    crop_arg: int  # the crop function's input argument holding the image
    shapes: tuple[str, ...]
    slices: tuple[str, ...]
    crop_size: tuple[int, int] | None
    tfds: bool = False  # the decode is tensorflow-datasets' own
    feature: str | None = None  # the tfds feature decoded ("image"), when the graph shows it
    conds: tuple[Cond, ...] = ()  # conds in the crop stage whose branches take windows of the image


def _identity_base(function, ref: str) -> str:
    """`ref` with Identity nodes looked through: the ref they copy."""
    nodes = {n.name: n for n in function.node_def}
    while _ref_node(ref) in nodes and nodes[_ref_node(ref)].op == "Identity":
        ref = nodes[_ref_node(ref)].input[0]
    return ref


def _passed_on(function, name: str) -> tuple[list[str], list[str], list[str]]:
    """Where `name`'s value goes through Identity nodes: (the ret keys returning it, the Identity
    nodes on the way, the ops of any other reader)."""
    rets, identities, others = [], [], []
    todo, seen = [name], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for node, _ in _readers(function, current):
            if node.op == "Identity":
                identities.append(node.name)
                todo.append(node.name)
            else:
                others.append(node.op)
        rets += [key for key, ref in function.ret.items() if _ref_node(ref) == current]
    return rets, identities, others


def _output_index(function, ret_key: str) -> int:
    return [a.name for a in function.signature.output_arg].index(ret_key)


def _arg_index(function, ref: str) -> int | None:
    names = [a.name for a in function.signature.input_arg]
    name = _ref_node(ref)
    return names.index(name) if name in names and ":" not in ref else None


def _aliases(function, images: list[str]) -> list[str]:
    """`images` (first) and the Identity nodes that copy them (tf.image.central_crop reads the image
    through one that waits for its checks)."""
    names, todo = [], list(reversed(images))
    while todo:
        name = todo.pop()
        names.append(name)
        todo += [n.name for n, _ in _readers(function, name) if n.op == "Identity" and n.name not in names]
    return names


class _Reads(NamedTuple):
    shapes: tuple[str, ...]
    slices: tuple[str, ...]
    crop_size: tuple[int, int] | None
    conds: tuple[Cond, ...]


def _image_readers(function, images: list[str]) -> tuple[list[str], list[tuple[object, list[int]]]]:
    """(the aliases of `images`, the nodes other than aliases reading them, each once with every
    input position where it reads one)."""
    aliases = _aliases(function, images)
    merged: dict[str, tuple[object, list[int]]] = {}
    for name in aliases:
        for node, reads in _readers(function, name):
            if node.name not in aliases:
                merged.setdefault(node.name, (node, []))[1].extend(reads)
    return aliases, [(node, sorted(reads)) for node, reads in merged.values()]


def _is_window(function, node, reads: list[int]) -> bool:
    return reads == [0] and (node.op == "Slice" or (node.op == "StridedSlice" and _strided_spec(function, node) is not None))


def _is_cropped(graph: PipelineGraph, function, images: list[str]) -> bool:
    """Some reader of the image takes a window of it (a Slice, `image[a:b, c:d]`), here or in a
    branch of a cond it flows into."""
    for node, reads in _image_readers(function, images)[1]:
        if _is_window(function, node, reads):
            return True
        if node.op in COND_OPS and 0 not in reads:
            for key in ("then_branch", "else_branch"):
                branch = graph.functions.get(node.attr[key].func.name)
                if branch is not None and _is_cropped(graph, branch, [branch.signature.input_arg[i - 1].name for i in reads]):
                    return True
    return False


def _crop_readers(graph: PipelineGraph, function, images: list[str], where: str = "") -> _Reads | str:
    """What reads `images` (or Identity copies of them) in `function`: Shape nodes, crops, and
    conds whose branches do only that; or why it is not only cropped."""
    aliases, readers = _image_readers(function, images)
    shapes = [n.name for n, _ in readers if n.op == "Shape" and n.attr["out_type"].type in (_INT32, _INT64)]
    slices = [n for n, i in readers if n.op == "Slice" and i == [0]]
    strided = [n for n, i in readers if n.op == "StridedSlice" and _is_window(function, n, i)]
    conds, others = [], []
    for node, reads in readers:
        if node.name in shapes or node in slices or node in strided:
            continue
        if node.op in COND_OPS and 0 not in reads:
            cond = _cond_reads(graph, node, reads)
            if isinstance(cond, str):
                return cond
            conds.append(cond)
        else:
            others.append(node.op)
    if others or any(_ref_node(ref) in aliases for ref in function.ret.values()):
        return (f"it also uses the whole decoded image (in {', '.join(sorted(set(others))) or 'its result'}{where}), "
                "not only the crop")
    crop_size = None
    for node in slices:
        # Any 3-D slice maps to a window: the helper applies the Slice's own begin and size
        # (channels, -1 "to the end" included) to the wider window; sizes known at run time only
        # (central_crop's, sample_distorted_bounding_box's) too.
        if node.attr["Index"].type != _INT32:
            return "it slices the decoded image with int64 offsets, which pipediag does not rewrite"
        size = _const(function, _ref_node(node.input[2]))
        if size is not None and size.shape == (3,) and crop_size is None and min(size[:2]) > 0:
            crop_size = (int(size[0]), int(size[1]))
    return _Reads(tuple(shapes), tuple(n.name for n in slices + strided), crop_size, tuple(conds))


def _cond_reads(graph: PipelineGraph, node, inputs: list[int]) -> Cond | str:
    """A cond taking the image in (inputs `inputs`, branch arguments `i - 1`): each branch may take
    its shape and windows of it (the center crop of tensorflow/models' parser) or leave it unread
    (the branch that passes the random crop on); returning or resizing it whole is a use of the
    whole image."""
    branches = []
    for key in ("then_branch", "else_branch"):
        function = graph.functions.get(node.attr[key].func.name)
        if function is None:
            return "a tf.cond reading the decoded image has a branch that is not in the pipeline's graph"
        args = tuple(i - 1 for i in inputs)
        reads = _crop_readers(graph, function, [function.signature.input_arg[a].name for a in args],
                              ", inside a tf.cond branch")
        if isinstance(reads, str):
            return reads
        branches.append(Branch(key, function.signature.name, args, reads.shapes, reads.slices, reads.conds))
    return Cond(node.name, tuple(inputs), tuple(branches))


def _strided_spec(function, node) -> tuple[int, int, int] | None:
    """`image[a:b, c:d]` (a StridedSlice): (number of dimensions indexed, begin_mask, end_mask)
    when it is a plain window: int32 indices, constant strides of 1, no ellipsis, new or shrunk
    axes. None otherwise (steps, `image[0]`, `...`: not a window)."""
    attrs = node.attr
    if attrs["Index"].type != _INT32 or attrs["ellipsis_mask"].i or attrs["new_axis_mask"].i or attrs["shrink_axis_mask"].i:
        return None
    strides = _const(function, _ref_node(node.input[3]))
    if strides is None or strides.ndim != 1 or not 1 <= strides.size <= 3 or (strides != 1).any():
        return None
    return int(strides.size), int(attrs["begin_mask"].i), int(attrs["end_mask"].i)


def _decoder_problem(decode) -> str | None:
    if decode.op == "DecodeJpeg" and decode.attr["ratio"].i not in (0, 1):
        return "its decode_jpeg downscales (ratio > 1)"
    if decode.op == "DecodeImage" and decode.attr["dtype"].type != tf.uint8.as_datatype_enum:
        return "its decode_image converts to another dtype than uint8"
    if decode.attr["channels"].i == 0:
        return "its decoder keeps the file's channels (channels=0): the crop's channel count is not known"
    return None


def _tfds_feature(function, decode) -> str | None:
    """The tfds feature a parse_and_decode decodes: the DecodeImage reads a (reshaped) dense value
    of ParseExampleV2, whose dense_keys name it."""
    nodes = {n.name: n for n in function.node_def}
    ref = decode.input[0]
    while _ref_node(ref) in nodes and nodes[_ref_node(ref)].op in ("Reshape", "Identity"):
        ref = nodes[_ref_node(ref)].input[0]
    parse = nodes.get(_ref_node(ref))
    parts = ref.split(":")
    if parse is None or parse.op != "ParseExampleV2" or len(parts) != 3 or parts[1] != "dense_values":
        return None
    keys = _const(function, _ref_node(parse.input[3]))
    try:
        key = keys.reshape(-1)[int(parts[2])]
    except (AttributeError, IndexError, ValueError):
        return None
    return key.decode() if isinstance(key, bytes) else str(key)


def _stage_label(graph: PipelineGraph, node: str) -> str:
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
        if _is_cropped(graph, crop_function, [arg.name]):
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
        label = _stage_label(graph, name)
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
        base = _identity_base(function, function.ret[ret_key])
        source = next((n for n in function.node_def if n.name == _ref_node(base)), None)
        if source is not None and source.op in DECODE_OPS:
            rets, _, others = _passed_on(function, source.name)
            if others or len(rets) != 1:
                return blocker or f"{label} also uses the whole decoded image (in {', '.join(sorted(set(others))) or 'two outputs'})"
            problem = _decoder_problem(source)
            if problem is not None:
                return blocker or problem
            if blocker is not None:
                return blocker
            crop = _crop_readers(graph, crop_function, [crop_function.signature.input_arg[arg_index].name])
            if isinstance(crop, str):
                return crop
            is_tfds = function_label(names[0]) == TFDS_DECODE_FUNCTION
            return AcrossSite(
                decode_node=name, decode_function=names[0], decode=source.name, decode_index=index,
                hops=tuple(reversed(hops)), crop_node=crop_node, crop_function=crop_function.signature.name,
                crop_arg=arg_index, shapes=crop.shapes, slices=crop.slices, crop_size=crop.crop_size,
                tfds=is_tfds, feature=_tfds_feature(function, source) if is_tfds else None, conds=crop.conds,
            )
        arg = _arg_index(function, base)
        if arg is None:
            return blocker  # made in this map, not decoded upstream
        rets, _, others = _passed_on(function, function.signature.input_arg[arg].name)
        if (others or len(rets) != 1) and blocker is None:
            blocker = f"{label} also uses the whole decoded image (in {', '.join(sorted(set(others))) or 'two outputs'})"
        hops.append(Hop(name, index, arg, names[0]))
        index = arg
    return blocker


def _decoders(decode):
    """(decode the whole image, decode a window of a JPEG), both as the original decoder does."""
    attrs = decode.attr
    channels = attrs["channels"].i
    if decode.op == "DecodeJpeg":
        jpeg = dict(channels=channels, ratio=1, fancy_upscaling=attrs["fancy_upscaling"].b,
                    try_recover_truncated=attrs["try_recover_truncated"].b,
                    acceptable_fraction=attrs["acceptable_fraction"].f, dct_method=attrs["dct_method"].s.decode())

        def whole(contents):
            return tf.io.decode_jpeg(contents, **jpeg)
    else:  # DecodeImage decodes a JPEG with decode_jpeg's defaults
        jpeg = dict(channels=channels)
        expand = attrs["expand_animations"].b

        def whole(contents):
            return tf.io.decode_image(contents, channels=channels, dtype=tf.uint8, expand_animations=expand)

    def window(contents, crop_window):
        return tf.image.decode_and_crop_jpeg(contents, crop_window, **jpeg)

    return whole, window, channels


def _helper_functions(decode, shape_dtypes: set, strided_specs: set = frozenset()) -> dict:
    """Traced helpers for the crop stage: `crop(contents, begin, size)` gives the Slice's result,
    `shape_<dtype>(contents)` the decoded image's shape, and one helper per kind of `image[a:b, c:d]`
    (see _strided_helper); as concrete functions."""
    whole, window, channels = _decoders(decode)
    string, vector = tf.TensorSpec([], tf.string), tf.TensorSpec([3], tf.int32)

    @tf.function(input_signature=[string, vector, vector], autograph=False)
    def pipediag_decode_crop_window(contents, begin, size):
        def windowed():
            margin = tf.constant(list(WINDOW_MARGIN_PX), tf.int32)  # made inside: a captured tensor would be an input
            image_hw = tf.image.extract_jpeg_shape(contents, output_type=tf.int32)[:2]
            top_left = begin[:2]
            crop_hw = tf.where(size[:2] < 0, image_hw - top_left, size[:2])  # -1: to the image's end
            start = tf.maximum(top_left - margin, 0)
            stop = tf.minimum(top_left + crop_hw + margin, image_hw)
            wide = window(contents, tf.concat([start, stop - start], 0))
            return tf.slice(wide, tf.concat([top_left - start, begin[2:]], 0), size)

        return tf.cond(tf.io.is_jpeg(contents), windowed, lambda: tf.slice(whole(contents), begin, size))

    functions = {"crop": pipediag_decode_crop_window.get_concrete_function()}
    for spec in strided_specs:
        functions[spec] = _strided_helper(spec, whole, window)
    for dtype in shape_dtypes:
        @tf.function(input_signature=[string], autograph=False)
        def pipediag_decode_crop_shape(contents, dtype=dtype):
            header = lambda: tf.concat([tf.image.extract_jpeg_shape(contents, output_type=dtype)[:2],  # noqa: E731
                                        tf.constant([channels], dtype)], 0)
            return tf.cond(tf.io.is_jpeg(contents), header, lambda: tf.shape(whole(contents), out_type=dtype))

        functions[dtype] = pipediag_decode_crop_shape.get_concrete_function()
    return functions


def _strided_helper(spec: tuple[int, int, int], whole, window):
    """`strided(contents, begin, end)`: what `image[...]` (a StridedSlice of `n` dimensions with
    these masks and strides 1) gives on the decoded image. The rows and columns it keeps are found
    by the same slice of `tf.range(height)` and `tf.range(width)` (negative and out-of-range
    indices resolve exactly as on the image); that window, widened, is decoded and sliced."""
    n, begin_mask, end_mask = spec
    string, vector = tf.TensorSpec([], tf.string), tf.TensorSpec([n], tf.int32)

    @tf.function(input_signature=[string, vector, vector], autograph=False)
    def pipediag_decode_crop_strided(contents, begin, end):
        def full():
            return tf.strided_slice(whole(contents), begin, end, tf.ones([n], tf.int32),
                                    begin_mask=begin_mask, end_mask=end_mask)

        def from_header():
            image_hw = tf.image.extract_jpeg_shape(contents, output_type=tf.int32)[:2]
            starts, lengths = [], []
            for d in range(2):
                if d < n:
                    kept = tf.strided_slice(tf.range(image_hw[d]), begin[d:d + 1], end[d:d + 1], [1],
                                            begin_mask=(begin_mask >> d) & 1, end_mask=(end_mask >> d) & 1)
                    starts.append(tf.reduce_min(tf.concat([kept, image_hw[d:d + 1]], 0)))  # kept[0]; empty: see below
                    lengths.append(tf.size(kept))
                else:
                    starts.append(tf.constant(0))
                    lengths.append(image_hw[d])
            top_left, crop_hw = tf.stack(starts), tf.stack(lengths)

            def windowed():
                margin = tf.constant(list(WINDOW_MARGIN_PX), tf.int32)
                start = tf.maximum(top_left - margin, 0)
                stop = tf.minimum(top_left + crop_hw + margin, image_hw)
                wide = window(contents, tf.concat([start, stop - start], 0))
                inner_begin, inner_end = top_left - start, top_left - start + crop_hw
                if n < 3:
                    return wide[inner_begin[0]:inner_end[0], inner_begin[1]:inner_end[1]]
                return tf.strided_slice(wide, tf.concat([inner_begin, begin[2:]], 0), tf.concat([inner_end, end[2:]], 0),
                                        [1, 1, 1], begin_mask=begin_mask & 4, end_mask=end_mask & 4)

            return tf.cond(tf.reduce_all(crop_hw > 0), windowed, full)  # an empty slice: as the original

        return tf.cond(tf.io.is_jpeg(contents), from_header, full)

    return pipediag_decode_crop_strided.get_concrete_function()


def _add_traced(graph: PipelineGraph, concrete) -> tuple[str, str]:
    """Add a traced function and the functions it calls to the graph's library; (its name, the
    name of its output)."""
    library = concrete.graph.as_graph_def().library
    for function in list(library.function) + [concrete.function_def]:
        if function.signature.name not in graph.functions:
            graph.add_function(function)
    return concrete.function_def.signature.name, concrete.function_def.signature.output_arg[0].name


def _copy_function(graph: PipelineGraph, name: str, suffix: str):
    original = graph.functions[name]
    function = type(original)()
    function.CopyFrom(original)
    function.signature.name = name + suffix
    return function


def _point_at(graph: PipelineGraph, node_name: str, old: str, new: str) -> None:
    node = graph.nodes[node_name]
    for key in node.attr:
        if node.attr[key].HasField("func") and node.attr[key].func.name == old:
            node.attr[key].func.name = new


def _carry_string(graph: PipelineGraph, node_name: str, index: int) -> None:
    """The stage's output component `index` is a scalar string now (the JPEG), not the image."""
    node = graph.nodes[node_name]
    type_key = "output_types" if "output_types" in node.attr else "Toutput_types"
    node.attr[type_key].list.type[index] = _STRING
    shape = node.attr["output_shapes"].list.shape[index]
    shape.Clear()  # a scalar


def _string_arg(function, index: int) -> None:
    function.signature.input_arg[index].type = _STRING
    if index in function.arg_attr:
        del function.arg_attr[index]  # its _output_shapes described the image


def _replace_crops(graph: PipelineGraph, function, decode, shapes, slices, contents_of, conds=(),
                   suffix: str = _SUFFIX) -> None:
    """In `function` (a copy being rewritten), replace each Shape and crop of the decoded image by
    a call of a helper on the JPEG bytes: `contents_of(ref)` gives the bytes' ref for the image
    ref a node read. The helpers (traced per decoder and kind of crop) join the graph's library.
    Each cond in `conds` takes the bytes in place of the image, and its branches are rewritten
    the same way, as copies named with `suffix`."""
    nodes = {n.name: n for n in function.node_def}
    strided = {name: _strided_spec(function, nodes[name]) for name in slices if nodes[name].op == "StridedSlice"}
    helpers = _helper_functions(decode, {tf.int64 if nodes[n].attr["out_type"].type == _INT64 else tf.int32
                                         for n in shapes}, set(strided.values()))
    names = {key: _add_traced(graph, concrete) for key, concrete in helpers.items()}
    replaced = {}
    for shape_name in shapes:
        dtype = tf.int64 if nodes[shape_name].attr["out_type"].type == _INT64 else tf.int32
        op, output = names[dtype]
        node = function.node_def.add()
        node.name, node.op = f"pipediag_decode_crop/{shape_name}", op
        node.input.append(contents_of(nodes[shape_name].input[0]))
        replaced[shape_name] = f"{node.name}:{output}:0"
    for slice_name in slices:
        op, output = names[strided.get(slice_name, "crop")]
        node = function.node_def.add()
        node.name, node.op = f"pipediag_decode_crop/{slice_name}", op
        crop = nodes[slice_name]
        node.input.extend([contents_of(crop.input[0])] + list(crop.input[1:3]))  # (bytes, begin, size or end)
        replaced[slice_name] = f"{node.name}:{output}:0"
    for node in function.node_def:
        for i, ref in enumerate(node.input):
            if not ref.startswith("^") and _ref_node(ref) in replaced:
                node.input[i] = replaced[_ref_node(ref)]
            elif ref.startswith("^") and _ref_node(ref) in replaced:
                node.input[i] = "^" + replaced[_ref_node(ref)].split(":")[0]
    for key, ref in list(function.ret.items()):
        if _ref_node(ref) in replaced:
            function.ret[key] = replaced[_ref_node(ref)]
    keep = [n for n in function.node_def if n.name not in replaced]
    del function.node_def[:]
    function.node_def.extend(keep)
    for cond in conds:
        _replace_cond(graph, function, decode, cond, contents_of, suffix)


def _replace_cond(graph: PipelineGraph, function, decode, cond: Cond, contents_of, suffix: str) -> None:
    """The cond takes the JPEG bytes where it took the image; its branches, rewritten copies, take
    the shape and windows of the image through the helpers (a branch not reading it is retyped)."""
    node = next(n for n in function.node_def if n.name == cond.node)
    for i in cond.inputs:
        node.input[i] = contents_of(node.input[i])
        node.attr["Tin"].list.type[i - 1] = _STRING
    for branch in cond.branches:
        copy = _copy_function(graph, branch.function, suffix)
        names = [copy.signature.input_arg[a].name for a in branch.args]
        for arg in branch.args:
            _string_arg(copy, arg)
        copies = {n.name: n for n in copy.node_def}
        for alias in _aliases(copy, names)[len(names):]:
            copies[alias].attr["T"].type = _STRING
        _replace_crops(graph, copy, decode, branch.shapes, branch.slices, lambda ref: ref, branch.conds, suffix)
        if copy.signature.name not in graph.functions:
            graph.add_function(copy)
        node.attr[branch.attr].func.name = copy.signature.name


def rewrite_across(graph: PipelineGraph, site: AcrossSite) -> str:
    """Move the decode into the crop stage as a windowed decode: the decode stage passes the JPEG
    bytes on, the stages between carry them, the crop stage decodes only its window. Returns the
    crop stage's new function's name. Functions are rewritten as copies."""
    decode_function = graph.functions[site.decode_function]
    decode = next(n for n in decode_function.node_def if n.name == site.decode)
    new_functions = []

    # The decode stage returns the JPEG instead of decoding it.
    function = _copy_function(graph, site.decode_function, _SUFFIX_ACROSS)
    jpeg = decode.input[0]
    rets, identities, _ = _passed_on(function, site.decode)
    function.ret[rets[0]] = jpeg
    function.signature.output_arg[site.decode_index].type = _STRING
    gone = set(identities) | {site.decode}
    keep = [n for n in function.node_def if n.name not in gone]
    for node in keep:
        kept = [ref for ref in node.input if _ref_node(ref) not in gone]
        del node.input[:]
        node.input.extend(kept)
    del function.node_def[:]
    function.node_def.extend(keep)
    new_functions.append((site.decode_node, site.decode_function, function))

    # The stages between carry the JPEG; maps among them pass it on through their Identity nodes.
    for hop in site.hops:
        if hop.function is None:
            continue
        function = _copy_function(graph, hop.function, _SUFFIX_ACROSS)
        arg = function.signature.input_arg[hop.arg].name
        rets, identities, _ = _passed_on(function, arg)
        _string_arg(function, hop.arg)
        function.signature.output_arg[_output_index(function, rets[0])].type = _STRING
        for node in function.node_def:
            if node.name in identities:
                node.attr["T"].type = _STRING
        new_functions.append((hop.node, hop.function, function))

    # The crop stage decodes only its window.
    function = _copy_function(graph, site.crop_function, _SUFFIX_ACROSS)
    _string_arg(function, site.crop_arg)
    contents = function.signature.input_arg[site.crop_arg].name
    nodes = {n.name: n for n in function.node_def}
    for alias in _aliases(function, [contents])[1:]:
        nodes[alias].attr["T"].type = _STRING  # Identity copies (with their control inputs) now copy the JPEG
    _replace_crops(graph, function, decode, site.shapes, site.slices, lambda ref: ref,  # the argument or a copy
                   site.conds, _SUFFIX_ACROSS)
    new_functions.append((site.crop_node, site.crop_function, function))

    for node_name, old, function in new_functions:
        if function.signature.name not in graph.functions:
            graph.add_function(function)
        _point_at(graph, node_name, old, function.signature.name)
    _carry_string(graph, site.decode_node, site.decode_index)
    for hop in site.hops:
        _carry_string(graph, hop.node, hop.index)
    return function.signature.name
