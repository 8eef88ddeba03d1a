"""The measured changes as edits of the user's builder source, made on its concrete syntax tree
(libcst), so every comment, blank line and formatting choice outside the edited calls stays.

Pure Python, no TensorFlow: a change names the stage it touches the way pipediag labels stages
(`map(decode_jpeg)`, `TFRecordDatasetV2(4 files)`, `batch(32)`), and the edit finds that call in
the builder function's own body. Each change kind becomes one edit:

- parallel_map: `.map(f)` gets `num_parallel_calls=tf.data.AUTOTUNE` (replacing a serial value);
- interleave: `.interleave(f, ...)` gets `num_parallel_calls=tf.data.AUTOTUNE`; a file reader given
  several files (`TFRecordDataset(files)`) gets `num_parallel_reads=tf.data.AUTOTUNE`; a
  `flat_map` over files becomes a parallel `interleave`;
- cache: `.cache()` right after the stage's call; for a stage built elsewhere (the last stage of
  `tfds.load(...)` or of a helper), on the dataset that call returns, before the next stage the
  builder writes (`_load().repeat()` -> `_load().cache().repeat()`): the same place in the graph;
  a cache that takes an epoch repeat's place moves the repeat after it, when both are in one
  expression (`x.repeat().map(f)` -> `x.map(f).cache().repeat()`), else it is refused;
- vectorize_map: `.map(f).batch(n)` becomes `.batch(n).map(f, num_parallel_calls=...)`, when both
  calls are in one expression;
- prefetch: every `return` of the builder ends its dataset with `.prefetch(tf.data.AUTOTUNE)`;
- threading: the returned dataset gets `Options` with the private thread pool the tuned mode used;
- snapshot (a fix, not a tuned change): `.snapshot(path)` after the stage, with a path the user gives;
- decode_crop: in the function the stage maps, a decode_jpeg then a crop of its image becomes a
  decode of the crop's window (patch/decode_crop.py, which says which forms it writes).

Where an edit would be a guess, it is refused with the reason and the fix's snippet is kept: the
stage is not written in the builder's body (built by a helper, in another package, by tfds), the
call sits in a loop (one call, many stages), several calls fit the label, or the kind has no safe
source form (a CSV read line by line, a decode and crop in two stages).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

import libcst as cst

from pipediag.patch import decode_crop
from pipediag.patch.locate import READERS, Refused, Source, call_method, find_function, matches, parse_label
from pipediag.records.change import Change

# The tuned mode's private thread pool for latency-bound reads (modes.tuning_rules).
THREADPOOL_DEFAULT = 32
EDIT_KINDS = ("parallel_map", "interleave", "cache", "vectorize_map", "prefetch", "threading", "snapshot",
              "decode_crop")


@dataclass(frozen=True)
class Edit:
    """One change and what became of it in the source."""

    kind: str
    stage: str | None
    description: str
    done: bool
    reason: str | None = None  # why it was not written as an edit
    snippet: str | None = None  # the fix's code, for the user to apply by hand when not done


@dataclass(frozen=True)
class Patch:
    path: str
    function: str
    original: str
    patched: str
    edits: tuple[Edit, ...] = field(default_factory=tuple)

    @property
    def done(self) -> list[Edit]:
        return [e for e in self.edits if e.done]

    @property
    def refused(self) -> list[Edit]:
        return [e for e in self.edits if not e.done]

    @property
    def changed(self) -> bool:
        return self.patched != self.original

    def diff(self) -> str:
        """A unified diff, applicable with `patch -p1` / `git apply` from the file's folder."""
        name = self.path.replace("\\", "/")
        lines = difflib.unified_diff(self.original.splitlines(keepends=True), self.patched.splitlines(keepends=True),
                                     fromfile=f"a/{name}", tofile=f"b/{name}")
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _with_kwarg(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with keyword=value, replacing an existing one; a new argument goes last, in the
    call's own style (a trailing comma stays trailing)."""
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            args[i] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    new = cst.Arg(keyword=cst.Name(keyword), value=value,
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    if args:
        last = args[-1]
        if isinstance(last.comma, cst.Comma):  # trailing comma: keep the call's layout
            new = new.with_changes(comma=last.comma)
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=_after_comma(last.comma)))
        else:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[*args, new])


def _after_comma(comma: cst.Comma):
    ws = comma.whitespace_after
    return ws if isinstance(ws, cst.ParenthesizedWhitespace) else cst.SimpleWhitespace(" ")


def _then(call: cst.BaseExpression, method: str, *args: cst.BaseExpression) -> cst.Call:
    """`call.method(args)`."""
    arg_nodes = [cst.Arg(a) for a in args]
    for i in range(len(arg_nodes) - 1):
        arg_nodes[i] = arg_nodes[i].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return cst.Call(func=cst.Attribute(value=call, attr=cst.Name(method)), args=arg_nodes)


# -- one function per change kind ----------------------------------------------------------------------

def _parallel_map(src: Source, change: Change) -> None:
    call = src.find(change.stage)
    src.replace[call] = _with_kwarg(src.current(call), "num_parallel_calls", src.autotune())


def _interleave(src: Source, change: Change) -> None:
    call = src.find(change.stage)
    kind, _ = parse_label(change.stage or "")
    current = src.current(call)
    if re.sub(r"V\d+$", "", kind) in READERS:
        src.replace[call] = _with_kwarg(current, "num_parallel_reads", src.autotune())
    elif kind == "flat_map":
        renamed = current.with_changes(func=current.func.with_changes(attr=cst.Name("interleave")))
        src.replace[call] = _with_kwarg(renamed, "num_parallel_calls", src.autotune())
    else:
        src.replace[call] = _with_kwarg(current, "num_parallel_calls", src.autotune())


def _cache(src: Source, change: Change) -> None:
    if change.details.get("repeat_stage"):
        _cache_past_repeat(src, change)
        return
    try:
        call = src.find(change.stage)
    except Refused as not_here:
        call = _next_call_on_outside_dataset(src, change.stage, not_here)
        current = src.current(call)
        src.replace[call] = current.with_changes(func=current.func.with_changes(value=_then(current.func.value, "cache")))
        return
    src.replace[call] = _then(src.current(call), "cache")


def _cache_past_repeat(src: Source, change: Change) -> None:
    """`x.repeat(n).map(f)` -> `x.map(f).cache().repeat(n)`: the repeat leaves its place and follows
    the cache, with its own arguments. Only within one expression, the stages between them all calls
    on the repeat's result; a repeat in another statement (`ds = ds.repeat()`) could be seen by other
    code in between, so that is refused."""
    call = src.find(change.stage)
    repeat = src.find(change.details["repeat_stage"])
    node = call
    while node is not repeat:
        receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
        if not isinstance(receiver, cst.Call):
            raise Refused(f"`{change.details['repeat_stage']}` and `{change.stage}` are not one expression "
                          "(`.repeat().map(f)`): moving the repeat across statements could change what other "
                          "code sees; move it after the cache by hand")
        node = receiver
    if repeat in src.replace or not isinstance(repeat.func, cst.Attribute):
        raise Refused(f"`{change.details['repeat_stage']}` is edited by another change already")
    src.replace[repeat] = repeat.func.value  # x.repeat(n) -> x
    cached = _then(src.current(call), "cache")
    src.replace[call] = cst.Call(func=cst.Attribute(value=cached, attr=cst.Name("repeat")), args=repeat.args)


def _next_call_on_outside_dataset(src: Source, label: str | None, not_here: Refused) -> cst.Call:
    """For a stage not written in the builder (the last one of a dataset made by a helper or by tfds):
    the builder's call of the stage right after it, when that call is made directly on the call that
    returns the outside dataset (`_load().repeat()`, `tfds.load(...).map(f)`), so that a cache
    between them sits where the tuned mode put it. Else `not_here` is raised: a dataset reached
    through a variable (`ds = tfds.load(...)`, then `ds.map(f)`) is left to the snippet."""
    labels = list(src.stage_labels)
    if label not in labels:
        raise not_here
    later = [x for x in labels[labels.index(label) + 1:] if not x.startswith(("prefetch", "options"))]
    if not later:
        raise not_here
    try:
        call = src.find(later[0])
    except Refused:
        raise not_here from None
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    if not isinstance(receiver, cst.Call) or any(matches(receiver, x) for x in labels):
        raise not_here
    return call


def _snapshot(src: Source, change: Change, snapshot_path: str | None) -> None:
    if not snapshot_path:
        raise Refused("snapshot() writes to disk: give the folder it may use (--snapshot-dir)")
    call = src.find(change.stage)
    src.replace[call] = _then(src.current(call), "snapshot", cst.SimpleString(repr(snapshot_path)))


def _vectorize(src: Source, change: Change) -> None:
    map_call = src.find(change.stage)
    batch = next((c.node for c in src.calls if call_method(c.node) == "batch" and c.node.func.value is map_call), None)
    if batch is None:
        raise Refused(f"`{change.stage}` and the batch after it are not one expression (`.map(f).batch(n)`): "
                      "moving the batch across statements could change what other code sees")
    if map_call in src.replace or batch in src.replace:
        raise Refused(f"`{change.stage}` is edited by another change already")
    mapped = _with_kwarg(map_call, "num_parallel_calls", src.autotune())
    # A.map(f, ...).batch(n, ...) -> A.batch(n, ...).map(f, ..., num_parallel_calls=AUTOTUNE)
    batched_first = batch.with_changes(func=batch.func.with_changes(value=map_call.func.value))
    src.replace[batch] = mapped.with_changes(func=mapped.func.with_changes(value=batched_first))


def _prefetch(src: Source, change: Change) -> None:
    _on_returns(src, lambda value: _then(value, "prefetch", src.autotune()))


def _threading(src: Source, change: Change) -> None:
    if src.tf is None:
        src.autotune()  # raises the reason
    size = int(change.details.get("private_threadpool_size") or THREADPOOL_DEFAULT)
    name = "options"
    while name in src.names:
        name = "tuned_" + name
    src.before_returns += [
        f"{name} = {src.tf}.data.Options()",
        f"{name}.threading.private_threadpool_size = {size}  # reads wait on I/O: more threads than cores",
    ]
    _on_returns(src, lambda value: _then(value, "with_options", cst.Name(name)))


def _on_returns(src: Source, wrap) -> None:
    if not src.returns:
        raise Refused(f"{src.function.name.value} has no `return` of a dataset")
    for ret in src.returns:
        current = src.replace.get(ret, ret)
        src.replace[ret] = current.with_changes(value=wrap(current.value))


class _Apply(cst.CSTTransformer):
    """Put the queued edits in: replaced nodes by identity, statements before each return. An
    edit was made on original nodes; the calls inside it may have been edited since (a cache on
    the reader inside an edited map), so every edit is rebased on what its children became."""

    def __init__(self, src: Source):
        self.src = src
        self.updated: dict[cst.CSTNode, cst.CSTNode] = {}  # original node -> its edited form

    def on_leave(self, original_node, updated_node):
        result = super().on_leave(original_node, updated_node)
        if result is not original_node:
            self.updated[original_node] = result
        return result

    def _rebase(self, new: cst.CSTNode) -> cst.CSTNode:
        updated = self.updated

        class _Rebase(cst.CSTTransformer):
            def on_visit(self, node) -> bool:
                return node not in updated

            def on_leave(self, original_node, updated_node):
                return updated.get(original_node, updated_node)

        return new.visit(_Rebase())

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        new = self.src.replace.get(original_node)
        return updated_node if new is None else self._rebase(new)

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        new = self.src.replace.get(original_node)
        return updated_node if new is None else self._rebase(new)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        if not self.src.before_returns:
            return updated_node
        body = []
        for old, new in zip(original_node.body, updated_node.body):
            if isinstance(old, cst.SimpleStatementLine) and any(r in self.src.returns for r in old.body):
                added = [cst.parse_statement(line + "\n") for line in self.src.before_returns]
                # The blank lines and comments above the return now stand above the added lines.
                added[0] = added[0].with_changes(leading_lines=new.leading_lines)
                body += added
                new = new.with_changes(leading_lines=())
            body.append(new)
        return updated_node.with_changes(body=body)


def patch_source(source: str, function: str, changes: list[Change], *, path: str = "builder.py",
                 snippets: dict[tuple[str, str | None], str] | None = None,
                 snapshot_path: str | None = None, stage_labels: list[str] | None = None) -> Patch:
    """Edit `function` in `source` for each change; the changes that cannot be edited safely are
    returned refused, with the reason and their snippet (`snippets[(kind, stage)]`). `stage_labels`:
    the diagnosed pipeline's stages in order (Stage.label), which place a cache on a dataset the
    builder gets from elsewhere."""
    snippets = snippets or {}
    module = cst.parse_module(source)
    try:
        fn = find_function(module, function)
    except Refused as error:
        edits = tuple(_refused(c, str(error), snippets) for c in changes)
        return Patch(path, function, source, source, edits)
    src = Source(module, fn, stage_labels)
    others = decode_crop.ModuleEdits()  # edits of the functions the stages map
    edits: list[Edit] = []
    for change in changes:
        try:
            if change.kind == "decode_crop":
                decode_crop.edit_decode_crop(module, src, change, others)
            else:
                _edit(src, change, snapshot_path)
        except Refused as error:
            edits.append(_refused(change, str(error), snippets))
        else:
            edits.append(Edit(change.kind, change.stage, change.description, True))
    new_fn = fn.visit(_Apply(src))
    patched = module.with_changes(body=[new_fn if s is fn else s for s in module.body])
    patched = decode_crop.apply(patched, others, src.tf).code
    return Patch(path, function, source, patched, tuple(edits))


def _refused(change: Change, reason: str, snippets: dict[tuple[str, str | None], str]) -> Edit:
    """The change left to the user: the reason, and its snippet."""
    return Edit(change.kind, change.stage, change.description, False, reason, snippets.get((change.kind, change.stage)))


_EDITORS = {"parallel_map": _parallel_map, "interleave": _interleave, "cache": _cache, "vectorize_map": _vectorize,
            "prefetch": _prefetch, "threading": _threading}


def _edit(src: Source, change: Change, snapshot_path: str | None) -> None:
    """Edit the source for one change; Refused, with the reason, when that cannot be done safely."""
    if change.kind == "snapshot":
        _snapshot(src, change, snapshot_path)
        return
    if change.kind == "vectorize_map" and change.details.get("form") == "csv":
        raise Refused("the CSV is parsed inside TensorFlow (make_csv_dataset or CsvDataset): the tuned mode "
                      "reads lines instead and adds decode_csv after the batch in the graph; rewriting the "
                      "source that way is not an edit pipediag can check, so apply the snippet")
    if change.kind == "decode_reduced":
        raise Refused("the decode is in the function the map runs, and the reduced decode picks its ratio per image "
                      "from the JPEG's header (a tf.case): apply the snippet in that function, or decline it, since "
                      "it changes pixels slightly")
    editor = _EDITORS.get(change.kind)
    if editor is None:
        raise Refused(f"{change.kind} has no source edit")
    editor(src, change)
