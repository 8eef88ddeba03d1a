"""Rewriting a decode-then-crop into a decode of the crop's window only: in one stage (rewrite) or with the
decode moved from an earlier stage into the crop's (rewrite_across), through traced helper functions."""

from __future__ import annotations

from pipediag.backends.tf import tf
from pipediag.builder.graph import PipelineGraph
from pipediag.tuner.decode_crop import (
    INT64,
    STRING,
    SUFFIX,
    SUFFIX_ACROSS,
    AcrossSite,
    Cond,
    Site,
    image_aliases,
    output_index,
    passed_on,
    ref_node,
    strided_spec,
)

# libjpeg's windowed decode lacks the neighbouring columns for colour upsampling at the window's
# edges (seen: the first and last columns off by up to 76/255). Decoding a window this much wider
# on every side (clipped to the image) and slicing the crop out of it gives the full decode's
# pixels exactly: with no margin 350 of 1372 crops differed (4:2:0 and 4:4:4 JPEGs, smooth and
# noisy, 7 row and 49 column offsets), with 1 column and no row none did; 2 and 2 keeps one
# chroma sample of 2x2 subsampling to spare. tests/tuner/test_decode_crop.py checks offsets.
WINDOW_MARGIN_PX = (2, 2)  # rows, columns: one chroma sample of 2x2 subsampling


def rewrite(graph: PipelineGraph, map_node: str, site: Site) -> str:
    """Rewrite a copy of the site's function in `graph` and point `map_node` at it; returns the
    new function's name. The original function is left as it was (other stages may call it).
    Each crop (and shape) of the decoded image becomes a call of a helper that decodes only the
    window of a JPEG, and the whole image of anything else (see _helper_functions); a cond that
    takes the image in takes the JPEG bytes instead, in rewritten copies of its branches."""
    function = _copy_function(graph, site.function, SUFFIX)
    decode = type(function.node_def[0])()
    decode.CopyFrom(next(n for n in function.node_def if n.name == site.decode))
    jpeg = decode.input[0]
    nodes = {n.name: n for n in function.node_def}
    for alias in image_aliases(function, [site.decode])[1:]:  # Identity copies of the image copy the JPEG now
        nodes[alias].attr["T"].type = STRING
        if ref_node(nodes[alias].input[0]) == site.decode:
            nodes[alias].input[0] = jpeg
    _replace_crops(graph, function, decode, site.shapes, site.slices,
                   lambda ref: jpeg if ref_node(ref) == site.decode else ref, site.conds, SUFFIX)
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
    node.attr[type_key].list.type[index] = STRING
    shape = node.attr["output_shapes"].list.shape[index]
    shape.Clear()  # a scalar


def _string_arg(function, index: int) -> None:
    function.signature.input_arg[index].type = STRING
    if index in function.arg_attr:
        del function.arg_attr[index]  # its _output_shapes described the image


def _replace_crops(graph: PipelineGraph, function, decode, shapes, slices, contents_of, conds=(),
                   suffix: str = SUFFIX) -> None:
    """In `function` (a copy being rewritten), replace each Shape and crop of the decoded image by
    a call of a helper on the JPEG bytes: `contents_of(ref)` gives the bytes' ref for the image
    ref a node read. The helpers (traced per decoder and kind of crop) join the graph's library.
    Each cond in `conds` takes the bytes in place of the image, and its branches are rewritten
    the same way, as copies named with `suffix`."""
    nodes = {n.name: n for n in function.node_def}
    strided = {name: strided_spec(function, nodes[name]) for name in slices if nodes[name].op == "StridedSlice"}
    helpers = _helper_functions(decode, {tf.int64 if nodes[n].attr["out_type"].type == INT64 else tf.int32
                                         for n in shapes}, set(strided.values()))
    names = {key: _add_traced(graph, concrete) for key, concrete in helpers.items()}
    replaced = {}
    for shape_name in shapes:
        dtype = tf.int64 if nodes[shape_name].attr["out_type"].type == INT64 else tf.int32
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
            if not ref.startswith("^") and ref_node(ref) in replaced:
                node.input[i] = replaced[ref_node(ref)]
            elif ref.startswith("^") and ref_node(ref) in replaced:
                node.input[i] = "^" + replaced[ref_node(ref)].split(":")[0]
    for key, ref in list(function.ret.items()):
        if ref_node(ref) in replaced:
            function.ret[key] = replaced[ref_node(ref)]
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
        node.attr["Tin"].list.type[i - 1] = STRING
    for branch in cond.branches:
        copy = _copy_function(graph, branch.function, suffix)
        names = [copy.signature.input_arg[a].name for a in branch.args]
        for arg in branch.args:
            _string_arg(copy, arg)
        copies = {n.name: n for n in copy.node_def}
        for alias in image_aliases(copy, names)[len(names):]:
            copies[alias].attr["T"].type = STRING
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
    function = _copy_function(graph, site.decode_function, SUFFIX_ACROSS)
    jpeg = decode.input[0]
    rets, identities, _ = passed_on(function, site.decode)
    function.ret[rets[0]] = jpeg
    function.signature.output_arg[site.decode_index].type = STRING
    gone = set(identities) | {site.decode}
    keep = [n for n in function.node_def if n.name not in gone]
    for node in keep:
        kept = [ref for ref in node.input if ref_node(ref) not in gone]
        del node.input[:]
        node.input.extend(kept)
    del function.node_def[:]
    function.node_def.extend(keep)
    new_functions.append((site.decode_node, site.decode_function, function))

    # The stages between carry the JPEG; maps among them pass it on through their Identity nodes.
    for hop in site.hops:
        if hop.function is None:
            continue
        function = _copy_function(graph, hop.function, SUFFIX_ACROSS)
        arg = function.signature.input_arg[hop.arg].name
        rets, identities, _ = passed_on(function, arg)
        _string_arg(function, hop.arg)
        function.signature.output_arg[output_index(function, rets[0])].type = STRING
        for node in function.node_def:
            if node.name in identities:
                node.attr["T"].type = STRING
        new_functions.append((hop.node, hop.function, function))

    # The crop stage decodes only its window.
    function = _copy_function(graph, site.crop_function, SUFFIX_ACROSS)
    _string_arg(function, site.crop_arg)
    contents = function.signature.input_arg[site.crop_arg].name
    nodes = {n.name: n for n in function.node_def}
    for alias in image_aliases(function, [contents])[1:]:
        nodes[alias].attr["T"].type = STRING  # Identity copies (with their control inputs) now copy the JPEG
    _replace_crops(graph, function, decode, site.shapes, site.slices, lambda ref: ref,  # the argument or a copy
                   site.conds, SUFFIX_ACROSS)
    new_functions.append((site.crop_node, site.crop_function, function))

    for node_name, old, function in new_functions:
        if function.signature.name not in graph.functions:
            graph.add_function(function)
        _point_at(graph, node_name, old, function.signature.name)
    _carry_string(graph, site.decode_node, site.decode_index)
    for hop in site.hops:
        _carry_string(graph, hop.node, hop.index)
    return function.signature.name
