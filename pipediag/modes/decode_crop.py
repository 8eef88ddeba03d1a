"""Decode only the crop window: `decode_jpeg` followed by a crop becomes `decode_and_crop_jpeg`.

A map that decodes a whole JPEG and then keeps a window of it (`tf.image.random_crop`, or a
`tf.slice`) pays for every pixel it throws away. libjpeg can decode just the window
(`tf.image.decode_and_crop_jpeg`); the crop's offset is then computed from the JPEG's header
(`tf.image.extract_jpeg_shape`) instead of from the decoded image. This module finds that pattern
inside the user's traced function and rewrites a copy of it:

    DecodeJpeg(jpeg) ─▶ Shape ─▶ (offset)         ExtractJpegShape(jpeg) ─▶ (offset)
                    └▶ Slice(·, offset, size)   ⇒   Slice(DecodeAndCropJpeg(jpeg, window), offset - start, size)

where `window` is the crop widened by WINDOW_MARGIN_PX on every side (clipped to the image), so
the crop's pixels are exactly those of the full decode.

Only where it is provably the same crop: the decoded image feeds nothing but `Shape` and a 3-D
`Slice` of int32 offsets, the slice keeps every channel (`size[2]` a constant equal to the decoder's
`channels`), and the decoder does not downscale (`ratio` 1). The tuned mode's safety check
still compares the first batches of deterministic pipelines, as for every other change.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.backends.tf import tf
from pipediag.builder.graph import PipelineGraph

_INT32 = 3  # DataType enum values in NodeDef attrs
_INT64 = 9
_SUFFIX = "_pipediag_decode_crop"
# libjpeg's windowed decode lacks the neighbouring columns for colour upsampling at the window's
# edges (seen: the first and last columns off by up to 76/255). Decoding a window this much wider
# on every side (clipped to the image) and slicing the crop out of it gives the full decode's
# pixels exactly: with no margin 350 of 1372 crops differed (4:2:0 and 4:4:4 JPEGs, smooth and
# noisy, 7 row and 49 column offsets), with 1 column and no row none did; 2 and 2 keeps one
# chroma sample of 2x2 subsampling to spare. tests/modes/test_decode_crop.py checks offsets.
WINDOW_MARGIN_PX = (2, 2)  # rows, columns: one chroma sample of 2x2 subsampling
NOTHING_TO_CROP = "it decodes no JPEG with decode_jpeg and then crops it"


@dataclass(frozen=True)
class Site:
    """One decode-then-crop inside a function: the decoder and what reads its image."""

    function: str
    decode: str  # the DecodeJpeg node
    shapes: tuple[str, ...]  # Shape nodes of the decoded image
    slices: tuple[str, ...]  # Slice nodes cropping it
    crop_size: tuple[int, int] | None = None  # height, width of the (first) window, when constant


def _ref_node(ref: str) -> str:
    return ref.lstrip("^").split(":")[0]


def _const(function, name: str):
    node = next((n for n in function.node_def if n.name == name), None)
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
    decodes = [n for n in function.node_def if n.op == "DecodeJpeg"]
    cropped = [(d, _readers(function, d.name)) for d in decodes]
    cropped = [(d, readers) for d, readers in cropped if any(n.op == "Slice" and i == [0] for n, i in readers)]
    if not cropped:
        return NOTHING_TO_CROP  # no JPEG decoded, or decoded and used whole (resized, returned)
    if len(cropped) > 1:
        return "it decodes and crops more than one JPEG"
    decode, readers = cropped[0]
    if decode.attr["ratio"].i not in (0, 1):
        return "its decode_jpeg downscales (ratio > 1)"
    channels = decode.attr["channels"].i
    if channels == 0:
        return "its decode_jpeg keeps the file's channels (channels=0): the crop's channel count is not known"
    shapes = [n.name for n, _ in readers if n.op == "Shape" and n.attr["out_type"].type in (_INT32, _INT64)]
    slices = [n for n, i in readers if n.op == "Slice" and i == [0]]
    others = [n.op for n, i in readers if n.name not in shapes and n not in slices]
    if others or any(_ref_node(ref) == decode.name for ref in function.ret.values()):
        return f"it also uses the whole decoded image (in {', '.join(sorted(set(others))) or 'its result'}), not only the crop"
    crop_size = None
    for node in slices:
        size = _const(function, _ref_node(node.input[2]))
        if node.attr["Index"].type != _INT32 or size is None or size.shape != (3,) or int(size[2]) not in (channels, -1):
            return "it slices the decoded image in a way pipediag cannot map to a crop window"
        crop_size = crop_size or (int(size[0]), int(size[1]))
    return Site(function_name, decode.name, tuple(shapes), tuple(n.name for n in slices), crop_size)


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
    new function's name. The original function is left as it was (other stages may call it)."""
    original = graph.functions[site.function]
    function = type(original)()
    function.CopyFrom(original)
    function.signature.name = site.function + _SUFFIX
    nodes = {n.name: n for n in function.node_def}
    decode = nodes[site.decode]
    jpeg = decode.input[0]

    def add(name: str, op: str, inputs: list[str], **attrs) -> str:
        node = function.node_def.add()
        node.name = f"pipediag_decode_crop/{name}"
        node.op = op
        node.input.extend(inputs)
        for key, value in attrs.items():
            if isinstance(value, tf.DType):
                node.attr[key].type = value.as_datatype_enum
            elif isinstance(value, int):
                node.attr[key].i = value
            else:
                node.attr[key].CopyFrom(value)
        return node.name

    def out(name: str) -> str:
        return f"{name}:output:0"  # Const, Slice and ConcatV2 name their output "output"

    def const(name: str, values, dtype) -> str:
        node = add(name, "Const", [], dtype=dtype)
        function.node_def[-1].attr["value"].tensor.CopyFrom(tf.make_tensor_proto(values, dtype=dtype))
        return out(node)

    def binary(name: str, op: str, a: str, b: str) -> str:
        return f"{add(name, op, [a, b], T=tf.int32)}:z:0"  # Sub, AddV2, Maximum, Minimum name their output z

    channels = decode.attr["channels"].i
    replaced: dict[str, str] = {}
    for i, shape_name in enumerate(site.shapes):
        dtype = tf.int64 if nodes[shape_name].attr["out_type"].type == _INT64 else tf.int32
        header = add(f"header_{i}", "ExtractJpegShape", [jpeg], output_type=dtype)
        height_width = add(f"height_width_{i}", "Slice", [f"{header}:image_shape:0", const(f"zero_{i}", [0], tf.int32),
                                                          const(f"two_{i}", [2], tf.int32)], T=dtype, Index=tf.int32)
        shape = add(f"shape_{i}", "ConcatV2", [out(height_width), const(f"channels_{i}", [channels], dtype),
                                               const(f"axis_{i}", 0, tf.int32)], N=2, T=dtype, Tidx=tf.int32)
        replaced[shape_name] = out(shape)

    for i, slice_name in enumerate(site.slices):
        crop = nodes[slice_name]
        zero, two = const(f"zero2_{i}", [0], tf.int32), const(f"two2_{i}", [2], tf.int32)

        def first_two(name: str, ref: str) -> str:
            return out(add(name, "Slice", [ref, zero, two], T=tf.int32, Index=tf.int32))

        begin = first_two(f"begin_{i}", crop.input[1])  # [y, x]
        size = first_two(f"size_{i}", crop.input[2])  # [h, w]
        header = add(f"window_header_{i}", "ExtractJpegShape", [jpeg], output_type=tf.int32)
        image_hw = first_two(f"image_hw_{i}", f"{header}:image_shape:0")
        margin = const(f"margin_{i}", list(WINDOW_MARGIN_PX), tf.int32)
        start = binary(f"start_{i}", "Maximum", binary(f"start_unclipped_{i}", "Sub", begin, margin),
                       const(f"origin_{i}", [0, 0], tf.int32))
        stop = binary(f"stop_{i}", "Minimum",
                      binary(f"stop_unclipped_{i}", "AddV2", binary(f"end_{i}", "AddV2", begin, size), margin),
                      image_hw)
        axis = const(f"axis2_{i}", 0, tf.int32)
        window = add(f"window_{i}", "ConcatV2", [start, binary(f"window_size_{i}", "Sub", stop, start), axis],
                     N=2, T=tf.int32, Tidx=tf.int32)
        wide = add(f"decode_and_crop_{i}", "DecodeAndCropJpeg", [jpeg, out(window)])
        for key in decode.attr:
            function.node_def[-1].attr[key].CopyFrom(decode.attr[key])
        inner = add(f"inner_begin_{i}", "ConcatV2", [binary(f"inner_{i}", "Sub", begin, start),
                                                    const(f"channel0_{i}", [0], tf.int32), axis],
                    N=2, T=tf.int32, Tidx=tf.int32)
        # The requested window out of the wider one: the same Slice, on the window's coordinates.
        cropped = add(f"crop_{i}", "Slice", [f"{wide}:image:0", out(inner), crop.input[2]],
                      T=tf.uint8, Index=tf.int32)
        replaced[slice_name] = out(cropped)

    for node in function.node_def:
        for i, ref in enumerate(node.input):
            if not ref.startswith("^") and _ref_node(ref) in replaced:
                node.input[i] = replaced[_ref_node(ref)]
    for key, ref in list(function.ret.items()):
        if _ref_node(ref) in replaced:
            function.ret[key] = replaced[_ref_node(ref)]
    gone = set(replaced) | {site.decode}
    keep = [n for n in function.node_def if n.name not in gone]
    del function.node_def[:]
    function.node_def.extend(keep)

    graph.add_function(function)
    node = graph.nodes[map_node]
    for key in node.attr:
        if node.attr[key].HasField("func") and node.attr[key].func.name == site.function:
            node.attr[key].func.name = function.signature.name
    return function.signature.name
