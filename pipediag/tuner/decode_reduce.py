"""Decoding a JPEG at a reduced size when the map resizes it down anyway: `decode_jpeg(x, ratio=r)`.

libjpeg can decode at 1/2, 1/4 or 1/8 of the size by scaling in the DCT domain, skipping most of
the inverse transform and the colour conversion of the pixels it would drop (measured here in
plain TensorFlow, 2-core machine: docs/verdict.md, "Decoding at a reduced size"). When a map
decodes a JPEG and the only thing done with the image is a resize to a constant size
(`tf.image.resize(image, [h, w])`, any method, antialiased or not), decoding at the largest ratio
that still leaves at least h x w pixels gives nearly the same image for much less work.

Not the same pixels: the DCT-domain downscale averages where a bilinear resize without antialias
samples, so the result differs (by a few levels of 255 on photo-like images), which is why this
change is *approximate*: its output is checked against the original's within a tolerance, not for
equality, and the fix says so and can be declined. The ratio is picked per image from the JPEG's
header, so an image too small to halve is decoded whole as before, and anything that is not a
JPEG (decode_jpeg also decodes PNG and GIF) is decoded exactly as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.backends.tf import tf
from pipediag.builder.graph import GraphError, PipelineGraph
from pipediag.records.change import Change
from pipediag.records.stage import Stage
from pipediag.tuner.decode_crop import const_value, ref_node
from pipediag.tuner.decode_crop_rewrite import _add_traced, _copy_function, _point_at

RESIZE_OPS = ("ResizeBilinear", "ResizeArea", "ResizeBicubic", "ResizeNearestNeighbor", "ScaleAndTranslate")
RATIOS = (8, 4, 2)  # what libjpeg's scaled decode offers below 1
SUFFIX = "_pipediag_decode_reduced"
NOTHING = "decodes no JPEG that it then only resizes"


@dataclass(frozen=True)
class ResizeSite:
    function: str
    decode: str  # the DecodeJpeg node
    size: tuple[int, int]  # the resize's constant height, width
    resize_op: str  # ResizeBilinear, ScaleAndTranslate (antialias=True), ...


def _readers(function, name: str) -> list:
    return [n for n in function.node_def if any(not r.startswith("^") and ref_node(r) == name for r in n.input)]


def find_site(function) -> ResizeSite | str:
    """The decode whose image is only resized to a constant size, in one function, or why none is."""
    decodes = [n for n in function.node_def if n.op == "DecodeJpeg"]
    if not decodes:
        return NOTHING
    if len(decodes) > 1:
        return "it decodes several JPEGs"
    decode = decodes[0]
    if decode.attr["ratio"].i not in (0, 1):
        return "its decode_jpeg already decodes at a reduced size"
    returned = {ref_node(ref) for ref in function.ret.values()}
    readers = _readers(function, decode.name)
    if decode.name in returned or len(readers) != 1 or readers[0].op != "ExpandDims" or readers[0].name in returned:
        return NOTHING  # the image is used otherwise than by tf.image.resize (which adds a batch axis)
    expand = readers[0]
    scope = expand.name.rsplit("/", 1)[0] + "/"
    after = _readers(function, expand.name)
    resizes = [n for n in after if n.op in RESIZE_OPS]
    others = [n for n in after if n.op not in RESIZE_OPS and not (n.op == "Shape" and n.name.startswith(scope))]
    if len(resizes) != 1 or others:
        return NOTHING
    resize = resizes[0]
    size = const_value(function, ref_node(resize.input[1]))
    if size is None or size.shape != (2,):
        return "its resize's size is not a constant"
    return ResizeSite(function.signature.name, decode.name, (int(size[0]), int(size[1])), resize.op)


def find_in_stage(graph: PipelineGraph, node: str) -> ResizeSite | str | None:
    """The decode-then-resize in the function a map stage runs; a reason when one is there but cannot
    be rewritten; None when the stage decodes no JPEG it only resizes."""
    for name in graph.node_functions(node):
        if name not in graph.functions:
            continue
        found = find_site(graph.functions[name])
        if isinstance(found, ResizeSite):
            return found
        if found != NOTHING:
            return found
    return None


def _helper(decode, size: tuple[int, int]):
    """A traced `pipediag_decode_reduced(contents)`: the decode at the largest ratio that leaves at
    least `size` pixels, from the JPEG's header; the original decode for anything else."""
    a = decode.attr
    jpeg = dict(channels=a["channels"].i, fancy_upscaling=a["fancy_upscaling"].b,
                try_recover_truncated=a["try_recover_truncated"].b, acceptable_fraction=a["acceptable_fraction"].f,
                dct_method=a["dct_method"].s.decode())
    height, width = size

    @tf.function(input_signature=[tf.TensorSpec([], tf.string)], autograph=False)
    def pipediag_decode_reduced(contents):
        def whole():
            return tf.io.decode_jpeg(contents, ratio=1, **jpeg)

        def reduced():
            hw = tf.image.extract_jpeg_shape(contents, output_type=tf.int32)
            reach = tf.minimum(hw[0] // height, hw[1] // width)
            branches = [(reach >= r, lambda r=r: tf.io.decode_jpeg(contents, ratio=r, **jpeg)) for r in RATIOS]
            return tf.case(branches, default=whole, exclusive=False)

        return tf.cond(tf.io.is_jpeg(contents), reduced, whole)

    return pipediag_decode_reduced.get_concrete_function()


def rewrite(graph: PipelineGraph, map_node: str, site: ResizeSite) -> str:
    """Point `map_node` at a copy of its function whose decode is the reduced one; the new function's name."""
    function = _copy_function(graph, site.function, SUFFIX)
    decode = next(n for n in function.node_def if n.name == site.decode)
    op, output = _add_traced(graph, _helper(decode, site.size))
    new = function.node_def.add()
    new.name, new.op = f"pipediag_decode_reduced/{site.decode}", op
    new.input.append(decode.input[0])
    for node in function.node_def:
        for i, ref in enumerate(node.input):
            if ref_node(ref) == site.decode:
                node.input[i] = "^" + new.name if ref.startswith("^") else f"{new.name}:{output}:0"
    keep = [n for n in function.node_def if n.name != site.decode]
    del function.node_def[:]
    function.node_def.extend(keep)
    graph.add_function(function)
    _point_at(graph, map_node, site.function, function.signature.name)
    return function.signature.name


def apply(graph: PipelineGraph, map_node: str) -> None:
    """The rewrite on `graph`, or GraphError with the reason."""
    site = find_in_stage(graph, map_node)
    if not isinstance(site, ResizeSite):
        raise GraphError(site or "its decode_jpeg was not found again")
    rewrite(graph, map_node, site)
    graph.to_dataset()  # TensorFlow must accept the rewritten function now


def change_for(stage: Stage, found: ResizeSite | str) -> Change:
    """The tuned mode's change for a map that decodes a JPEG and only resizes it; left out with the
    reason when `found` is one."""
    if isinstance(found, str):
        return Change("decode_reduced", stage.label, stage.node, f"{stage.label}: decode JPEGs at a reduced size",
                      applied=False, reason=found)
    height, width = found.size
    description = (f"{stage.label}: decode each JPEG at a reduced size (decode_jpeg ratio 2, 4 or 8, the largest that "
                   f"still leaves {height}x{width} pixels, read from its header) before the resize to {height}x{width}: "
                   "a downscale inside the JPEG decoder, much cheaper than a full decode; APPROXIMATE: the pixels "
                   "differ slightly from those of a full decode and resize, so decline it where exact pixels matter")
    return Change("decode_reduced", stage.label, stage.node, description, applied=True,
                  details={"size": [height, width], "resize": found.resize_op, "approximate": True})
