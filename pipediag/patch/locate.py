"""Finding the user's builder function and its pipeline's calls in their source (libcst), each matched to a
stage pipediag saw in the graph."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

READERS = ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset")


class Refused(Exception):
    """An edit that cannot be written safely; the message is the reason."""


@dataclass
class _Call:
    node: cst.Call
    in_loop: bool
    in_nested_function: bool


class _Collector(cst.CSTVisitor):
    """Every call in one function body, with whether it sits in a loop or a nested function."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []
        self.returns: list[cst.Return] = []
        self.names: set[str] = set()
        self._loops = 0
        self._functions = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions -= 1

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._functions += 1

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._functions -= 1

    def _loop_in(self, node) -> None:
        self._loops += 1

    def _loop_out(self, node) -> None:
        self._loops -= 1

    visit_For = visit_While = visit_ListComp = visit_GeneratorExp = visit_SetComp = visit_DictComp = _loop_in
    leave_For = leave_While = leave_ListComp = leave_GeneratorExp = leave_SetComp = leave_DictComp = _loop_out

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(_Call(node, self._loops > 0, self._functions > 1))

    def visit_Return(self, node: cst.Return) -> None:
        if self._functions == 1 and node.value is not None:
            self.returns.append(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def find_function(module: cst.Module, name: str) -> cst.FunctionDef:
    if "." in name:
        raise Refused(f"{name} is a method; pipediag patches module-level builder functions only")
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    raise Refused(f"no function {name} is defined at the top level of the file")


def _tf_alias(module: cst.Module) -> str | None:
    """How the file names TensorFlow (`tf` after `import tensorflow as tf`), or None."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if dotted_name(alias.name) == "tensorflow":
                        return alias.asname.name.value if alias.asname else "tensorflow"
    return None


def dotted_name(node) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted_name(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
    return None


def call_method(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def _first_arg(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[0].value if positional else None


def _function_name(expr) -> str | None:
    """The name pipediag's label gives a function argument: `decode`, `module.decode` -> decode."""
    if isinstance(expr, cst.Lambda):
        return "<lambda>"
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


_LABEL = re.compile(r"^(?P<kind>[A-Za-z_]\w*)\((?P<arg>.*)\)$")


def parse_label(label: str) -> tuple[str, str | None]:
    m = _LABEL.match(label)
    return (m["kind"], m["arg"]) if m else (label, None)


def matches(call: cst.Call, label: str) -> bool:
    """Is this call the stage pipediag labels `label`?"""
    kind, arg = parse_label(label)
    method = call_method(call)
    reader = re.sub(r"V\d+$", "", kind)
    if reader in READERS:
        return (dotted_name(call.func) or "").split(".")[-1] == reader
    if kind in ("map", "parallel_map"):
        return method == "map" and _function_name(_first_arg(call, "map_func")) == arg
    if kind in ("interleave", "parallel_interleave", "flat_map", "filter"):
        keyword = "predicate" if kind == "filter" else "map_func"
        wanted = "interleave" if kind == "parallel_interleave" else kind
        return method == wanted and _function_name(_first_arg(call, keyword)) == arg
    if kind == "from_generator":
        return method == "from_generator" and _function_name(_first_arg(call, "generator")) == arg
    if kind in ("batch", "shuffle", "prefetch"):
        if method != kind:
            return False
        value = _first_arg(call, "batch_size" if kind == "batch" else "buffer_size")
        if isinstance(value, cst.Integer):
            return value.evaluated_value == int(arg) if arg and arg.isdigit() else False
        return True  # a variable (batch_size): the label has its value, the source its name
    return arg is None and method == kind


class Source:
    """The builder function's calls, and the edits queued on them (applied in one pass)."""

    def __init__(self, module: cst.Module, function: cst.FunctionDef, stage_labels: list[str] | None = None):
        self.module = module
        self.function = function
        self.stage_labels = tuple(stage_labels or ())
        collector = _Collector()
        function.visit(collector)
        self.calls = collector.calls
        self.returns = collector.returns
        self.names = collector.names
        self.tf = _tf_alias(module)
        self.replace: dict[cst.CSTNode, cst.CSTNode] = {}  # original call -> its edited form
        self.before_returns: list[str] = []  # statements put before every return

    def find(self, label: str | None) -> cst.Call:
        if not label:
            raise Refused("the change names no stage")
        found = [c for c in self.calls if matches(c.node, label)]
        name = self.function.name.value
        if not found:
            raise Refused(f"`{label}` is not written in {name}'s body (built by a helper, in another package or "
                          "by tensorflow-datasets): pipediag edits only the builder it was given")
        if len(found) > 1:
            raise Refused(f"{len(found)} calls in {name} fit `{label}`: pipediag cannot tell which one is the stage")
        call = found[0]
        if call.in_loop:
            raise Refused(f"`{label}` is built in a loop in {name}: one call there makes several stages")
        if call.in_nested_function:
            raise Refused(f"`{label}` is built inside a function nested in {name}")
        return call.node

    def autotune(self) -> cst.BaseExpression:
        if self.tf is None:
            raise Refused("the file does not `import tensorflow` (as tf): pipediag would have to add an import")
        return cst.parse_expression(f"{self.tf}.data.AUTOTUNE")

    def current(self, call: cst.Call) -> cst.Call:
        return self.replace.get(call, call)
