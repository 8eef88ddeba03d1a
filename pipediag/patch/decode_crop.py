"""The decode_crop change as a source edit: in the function a map stage runs, a JPEG decoded whole and
then cropped becomes a decode of the crop's window only.

The edit covers the form most pipelines write, two statements in a row at the top of the mapped
function's body (a module-level function of the same file):

    image = tf.io.decode_jpeg(jpeg, channels=3)          # or tf.image.decode_jpeg
    image = tf.image.random_crop(image, [H, W, 3])       # or crop_to_bounding_box(image, top, left, H, W)

They become a read of the JPEG's header, the offset drawn as random_crop draws it (uniform over
every window that fits; the same distribution, not the same draws) and a call of a helper the edit
adds to the file, `decode_jpeg_window`. Like the tuned mode's graph rewrite, the helper decodes a
window 2 pixels wider on every side (clipped to the image) and slices the crop out of it: libjpeg's
windowed decode lacks the neighbours that colour upsampling reads at the window's edges, and the
margin gives the full decode's pixels exactly (tuner/decode_crop_rewrite.WINDOW_MARGIN_PX).

Everything else is refused with the reason, and the fix's snippet is kept: a decode in another
stage than the crop, an inception-style crop from sample_distorted_bounding_box, tfds' decoders,
`decode_image` (PNGs too), a seeded random_crop, decoder options that change the pixels, a decoded
image that is read again after the crop, or a function that is not a plain module-level `def`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from pipediag.patch.locate import Refused, Source, dotted_name, parse_label
from pipediag.records.change import Change

DECODERS = ("io.decode_jpeg", "image.decode_jpeg")
CROPS = ("image.random_crop", "image.crop_to_bounding_box")
KEPT_DECODER_ARGS = ("contents", "channels", "name")
MARGIN_PX = 2  # rows and columns, as tuner/decode_crop_rewrite.WINDOW_MARGIN_PX
HELPER_NAME = "decode_jpeg_window"

_HELPER = '''

def {name}(jpeg, top, left, height, width, channels=0):
    """Decode only a window of a JPEG (added by pipediag fix). The window is decoded {m} pixels wider on
    every side (clipped to the image) and the crop sliced out of it, so its pixels are the full
    decode's: libjpeg's windowed decode lacks the neighbours colour upsampling reads at its edges."""
    shape = {tf}.image.extract_jpeg_shape(jpeg)
    top0 = {tf}.maximum(top - {m}, 0)
    left0 = {tf}.maximum(left - {m}, 0)
    bottom = {tf}.minimum(top + height + {m}, shape[0])
    right = {tf}.minimum(left + width + {m}, shape[1])
    window = {tf}.image.decode_and_crop_jpeg(
        jpeg, {tf}.stack([top0, left0, bottom - top0, right - left0]), channels=channels)
    return {tf}.slice(window, {tf}.stack([top - top0, left - left0, 0]), [height, width, -1])
'''


@dataclass
class ModuleEdits:
    """Edits of module-level functions other than the builder, applied after the builder's."""

    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)  # name -> its edited form
    helper: str | None = None  # the helper's name, once one is to be added


def _tf_call(call: cst.BaseExpression, tf: str, names: tuple[str, ...]) -> str | None:
    """Which of `names` (`image.random_crop`) this call is, as `tf.image.random_crop`; or None."""
    if not isinstance(call, cst.Call):
        return None
    dotted = dotted_name(call.func) or ""
    return next((n for n in names if dotted == f"{tf}.{n}"), None)


def _arg(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if len(positional) > position else None


def _assign(statement) -> tuple[str, cst.BaseExpression] | None:
    """`name = value` as (name, value), for a one-statement line; else None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if not isinstance(small, cst.Assign) or len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
        return None
    return small.targets[0].target.value, small.value


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def _names(nodes) -> set[str]:
    visitor = _Names()
    for node in nodes:
        node.visit(visitor)
    return visitor.names


def _code(expr: cst.BaseExpression) -> str:
    return cst.Module(body=[]).code_for_node(expr)


def _term(expr: cst.BaseExpression) -> str:
    """The expression's code, in parentheses unless it is one name, number or attribute."""
    code = _code(expr)
    return code if isinstance(expr, (cst.Name, cst.Integer, cst.Attribute, cst.Subscript)) else f"({code})"


def _mapped_function(module: cst.Module, src: Source, change: Change) -> cst.FunctionDef:
    details = change.details
    if details.get("tfds"):
        raise Refused("the JPEGs are decoded by tensorflow-datasets: pass its decoders= (the snippet), "
                      "which a source edit of the builder cannot write safely")
    if details.get("decode_stage"):
        raise Refused(f"the JPEG is decoded in another stage ({details['decode_stage']}) than it is cropped: "
                      "moving the decode across stages changes what the first stage yields, so apply the snippet")
    if details.get("sampled_box"):
        raise Refused("the crop's box comes from sample_distorted_bounding_box (an inception-style crop): "
                      "pipediag writes only plain crops as an edit, so apply the snippet")
    call = src.find(change.stage)
    _, name = parse_label(change.stage or "")
    func = _arg(call, 0, "map_func")
    if not isinstance(func, cst.Name) or func.value != name:
        raise Refused(f"`{change.stage}` maps a function that is not named in this file (a lambda or "
                      "another module's): pipediag edits only functions defined here")
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            if statement.decorators:
                raise Refused(f"{name} is decorated: its body may not be what the stage runs")
            return statement
    raise Refused(f"no function {name} is defined at the top level of the file")


def _decode_then_crop(body: list, tf: str) -> tuple[int, str, cst.Call, str, cst.Call, str]:
    """The decode and the crop right after it: (index of the decode, its variable, the decode call,
    the crop's variable, the crop call, the crop's kind)."""
    found = []
    for i, statement in enumerate(body[:-1]):
        decoded = _assign(statement)
        if decoded and _tf_call(decoded[1], tf, DECODERS):
            cropped = _assign(body[i + 1])
            kind = cropped and _tf_call(cropped[1], tf, CROPS)
            if kind:
                image = _arg(cropped[1], 0, "value" if kind == "image.random_crop" else "image")
                if isinstance(image, cst.Name) and image.value == decoded[0]:
                    found.append((i, decoded[0], decoded[1], cropped[0], cropped[1], kind))
    if not found:
        raise Refused("no `decode_jpeg` followed by `random_crop` or `crop_to_bounding_box` of its image, as two "
                      "statements in a row in the function's body: pipediag edits only that form")
    if len(found) > 1:
        raise Refused("the function decodes and crops more than one JPEG")
    return found[0]


def _window(crop: cst.Call, kind: str, jpeg: str, tf: str, taken: set[str]) -> tuple[list[str], str, str, str, str]:
    """The statements that draw the window, and its top, left, height and width as code."""
    if kind == "image.crop_to_bounding_box":
        parts = [_arg(crop, i, k) for i, k in enumerate(("image", "offset_height", "offset_width",
                                                         "target_height", "target_width"))]
        if any(p is None for p in parts) or len(crop.args) > 5:
            raise Refused("crop_to_bounding_box is not called with its four numbers")
        return [], *(_code(p) for p in parts[1:])
    if _arg(crop, 2, "seed") is not None:
        raise Refused("the random_crop is seeded: drawing its window another way changes the seeded crops, "
                      "so apply the snippet")
    size = _arg(crop, 1, "size")
    if not isinstance(size, (cst.List, cst.Tuple)) or len(size.elements) != 3:
        raise Refused("random_crop's size is not written as [height, width, channels]")
    height, width = (e.value for e in size.elements[:2])

    def fresh(name: str) -> str:
        while name in taken:
            name = "crop_" + name
        taken.add(name)
        return name

    shape, top, left = fresh("jpeg_shape"), fresh("crop_top"), fresh("crop_left")
    lines = [
        f"{shape} = {tf}.image.extract_jpeg_shape({jpeg})  # the JPEG's header: its size",
        f"{top} = {tf}.random.uniform([], 0, {shape}[0] - {_term(height)} + 1, dtype={tf}.int32)",
        f"{left} = {tf}.random.uniform([], 0, {shape}[1] - {_term(width)} + 1, dtype={tf}.int32)",
    ]
    return lines, top, left, _code(height), _code(width)


def edit_decode_crop(module: cst.Module, src: Source, change: Change, edits: ModuleEdits) -> None:
    """Queue the decode_crop edit of the function `change.stage` maps; Refused with the reason."""
    tf = src.tf
    if tf is None:
        raise Refused("the file does not `import tensorflow` (as tf): pipediag would have to add an import")
    function = _mapped_function(module, src, change)
    name = function.name.value
    current = edits.functions.get(name, function)
    if not isinstance(current.body, cst.IndentedBlock):
        raise Refused(f"{name}'s body is on its `def` line")
    body = list(current.body.body)
    i, decoded, decode, cropped, crop, kind = _decode_then_crop(body, tf)
    if any(arg.keyword is not None and arg.keyword.value not in KEPT_DECODER_ARGS for arg in decode.args):
        raise Refused("decode_jpeg is called with options that change its pixels or size (ratio, dct_method, ...): "
                      "apply the snippet")
    jpeg = _arg(decode, 0, "contents")
    if not isinstance(jpeg, (cst.Name, cst.Attribute, cst.Subscript)):
        raise Refused("the JPEG bytes decode_jpeg reads are computed in the call: pipediag would read them twice")
    if cropped != decoded and decoded in _names(body[i + 2:]):
        raise Refused(f"`{decoded}`, the whole decoded image, is read again after the crop")
    channels = _arg(decode, 1, "channels")
    taken = _names([module])
    lines, top, left, height, width = _window(crop, kind, _code(jpeg), tf, taken)
    helper = edits.helper or _fresh_helper(taken)
    tail = f", channels={_code(channels)}" if channels is not None else ""
    lines.append(f"{cropped} = {helper}({_code(jpeg)}, {top}, {left}, {height}, {width}{tail})")
    new = [cst.parse_statement(line + "\n") for line in lines]
    new[0] = new[0].with_changes(leading_lines=(*body[i].leading_lines, *body[i + 1].leading_lines))
    body[i:i + 2] = new
    edits.functions[name] = current.with_changes(body=current.body.with_changes(body=body))
    edits.helper = helper


def _fresh_helper(taken: set[str]) -> str:
    name = HELPER_NAME
    while name in taken:
        name = "pipediag_" + name
    return name


def apply(module: cst.Module, edits: ModuleEdits, tf: str | None) -> cst.Module:
    """The module with the edited functions in place and the helper added before the first of them."""
    if not edits.functions:
        return module
    body = []
    helper_added = edits.helper is None
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value in edits.functions:
            if not helper_added:
                helper = cst.parse_module(_HELPER.format(name=edits.helper, tf=tf, m=MARGIN_PX)).body[0]
                body.append(helper.with_changes(leading_lines=(cst.EmptyLine(), cst.EmptyLine())))
                helper_added = True
            body.append(edits.functions[statement.name.value])
        else:
            body.append(statement)
    return module.with_changes(body=body)
