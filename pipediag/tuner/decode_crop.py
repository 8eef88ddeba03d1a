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

_INT32 = 3  # DataType enum values in NodeDef attrs
INT64 = 9
SUFFIX = "_pipediag_decode_crop"
NOTHING_TO_CROP = "it decodes no JPEG with decode_jpeg or decode_image and then crops it"


@dataclass(frozen=True)
class Branch:
    """One branch function of a cond that reads the decoded image, and what it does with it."""

    attr: str  # the If node's attribute naming it: "then_branch" or "else_branch"
    function: str
    args: tuple[int, ...]  # its arguments holding the image (unread in a branch that passes the crop on)
    shapes: tuple[str, ...]
    slices: tuple[str, ...]
    conds: tuple[Cond, ...] = ()


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


def ref_node(ref: str) -> str:
    return ref.lstrip("^").split(":")[0]


def const_value(function, name: str):
    """The value of a Const node, or of a Pack of scalar Consts (the strides of `image[a:b, c:d, :]`
    with tensor bounds are packed that way); None for anything else."""
    node = next((n for n in function.node_def if n.name == name), None)
    if node is not None and node.op == "Pack" and node.attr["axis"].i == 0:
        parts = [const_value(function, ref_node(ref)) for ref in node.input if not ref.startswith("^")]
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
        reads = [i for i, ref in enumerate(node.input) if not ref.startswith("^") and ref_node(ref) == name]
        if reads:
            out.append((node, reads))
    return out


def find_site(graph: PipelineGraph, function_name: str) -> Site | str:
    """The decode-then-crop in this function, or why there is none to rewrite."""
    function = graph.functions.get(function_name)
    if function is None:
        return "its function is not in the pipeline's graph"
    cropped = [n for n in function.node_def if n.op in DECODE_OPS and is_cropped(graph, function, [n.name])]
    if not cropped:
        return NOTHING_TO_CROP  # no JPEG decoded, or decoded and used whole (resized, returned)
    if len(cropped) > 1:
        return "it decodes and crops more than one JPEG"
    decode = cropped[0]
    problem = decoder_problem(decode)
    if problem is not None:
        return problem
    reads = crop_readers(graph, function, [decode.name])
    if isinstance(reads, str):
        return reads
    return Site(function_name, decode.name, reads.shapes, reads.slices, reads.crop_size, reads.conds,
                decoder="decode_jpeg" if decode.op == "DecodeJpeg" else "decode_image",
                sampled_box=_sampled_box(function, reads.slices))


def _sampled_box(function, slices) -> bool:
    """A crop whose begin comes from sample_distorted_bounding_box (the inception-style crop)."""
    nodes = {n.name: n for n in function.node_def}
    begins = [ref_node(identity_base(function, nodes[name].input[1])) for name in slices if nodes[name].op == "Slice"]
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
STRING = 7
SUFFIX_ACROSS = "_pipediag_decode_crop_across"


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


def identity_base(function, ref: str) -> str:
    """`ref` with Identity nodes looked through: the ref they copy."""
    nodes = {n.name: n for n in function.node_def}
    while ref_node(ref) in nodes and nodes[ref_node(ref)].op == "Identity":
        ref = nodes[ref_node(ref)].input[0]
    return ref


def passed_on(function, name: str) -> tuple[list[str], list[str], list[str]]:
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
        rets += [key for key, ref in function.ret.items() if ref_node(ref) == current]
    return rets, identities, others


def output_index(function, ret_key: str) -> int:
    return [a.name for a in function.signature.output_arg].index(ret_key)


def image_aliases(function, images: list[str]) -> list[str]:
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
    aliases = image_aliases(function, images)
    merged: dict[str, tuple[object, list[int]]] = {}
    for name in aliases:
        for node, reads in _readers(function, name):
            if node.name not in aliases:
                merged.setdefault(node.name, (node, []))[1].extend(reads)
    return aliases, [(node, sorted(reads)) for node, reads in merged.values()]


def _is_window(function, node, reads: list[int]) -> bool:
    return reads == [0] and (node.op == "Slice" or (node.op == "StridedSlice" and strided_spec(function, node) is not None))


def is_cropped(graph: PipelineGraph, function, images: list[str]) -> bool:
    """Some reader of the image takes a window of it (a Slice, `image[a:b, c:d]`), here or in a
    branch of a cond it flows into."""
    for node, reads in _image_readers(function, images)[1]:
        if _is_window(function, node, reads):
            return True
        if node.op in COND_OPS and 0 not in reads:
            for key in ("then_branch", "else_branch"):
                branch = graph.functions.get(node.attr[key].func.name)
                if branch is not None and is_cropped(graph, branch, [branch.signature.input_arg[i - 1].name for i in reads]):
                    return True
    return False


def crop_readers(graph: PipelineGraph, function, images: list[str], where: str = "") -> _Reads | str:
    """What reads `images` (or Identity copies of them) in `function`: Shape nodes, crops, and
    conds whose branches do only that; or why it is not only cropped."""
    aliases, readers = _image_readers(function, images)
    shapes = [n.name for n, _ in readers if n.op == "Shape" and n.attr["out_type"].type in (_INT32, INT64)]
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
    if others or any(ref_node(ref) in aliases for ref in function.ret.values()):
        return (f"it also uses the whole decoded image (in {', '.join(sorted(set(others))) or 'its result'}{where}), "
                "not only the crop")
    crop_size = None
    for node in slices:
        # Any 3-D slice maps to a window: the helper applies the Slice's own begin and size
        # (channels, -1 "to the end" included) to the wider window; sizes known at run time only
        # (central_crop's, sample_distorted_bounding_box's) too.
        if node.attr["Index"].type != _INT32:
            return "it slices the decoded image with int64 offsets, which pipediag does not rewrite"
        size = const_value(function, ref_node(node.input[2]))
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
        reads = crop_readers(graph, function, [function.signature.input_arg[a].name for a in args],
                              ", inside a tf.cond branch")
        if isinstance(reads, str):
            return reads
        branches.append(Branch(key, function.signature.name, args, reads.shapes, reads.slices, reads.conds))
    return Cond(node.name, tuple(inputs), tuple(branches))


def strided_spec(function, node) -> tuple[int, int, int] | None:
    """`image[a:b, c:d]` (a StridedSlice): (number of dimensions indexed, begin_mask, end_mask)
    when it is a plain window: int32 indices, constant strides of 1, no ellipsis, new or shrunk
    axes. None otherwise (steps, `image[0]`, `...`: not a window)."""
    attrs = node.attr
    if attrs["Index"].type != _INT32 or attrs["ellipsis_mask"].i or attrs["new_axis_mask"].i or attrs["shrink_axis_mask"].i:
        return None
    strides = const_value(function, ref_node(node.input[3]))
    if strides is None or strides.ndim != 1 or not 1 <= strides.size <= 3 or (strides != 1).any():
        return None
    return int(strides.size), int(attrs["begin_mask"].i), int(attrs["end_mask"].i)


def decoder_problem(decode) -> str | None:
    if decode.op == "DecodeJpeg" and decode.attr["ratio"].i not in (0, 1):
        return "its decode_jpeg downscales (ratio > 1)"
    if decode.op == "DecodeImage" and decode.attr["dtype"].type != tf.uint8.as_datatype_enum:
        return "its decode_image converts to another dtype than uint8"
    if decode.attr["channels"].i == 0:
        return "its decoder keeps the file's channels (channels=0): the crop's channel count is not known"
    return None

