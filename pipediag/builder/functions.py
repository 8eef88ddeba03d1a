"""The user's Python functions behind the pipeline's graph functions.

The serialized graph holds each `map`/`filter`/`interleave` function as a traced FunctionDef.
Some rewrites need the Python function itself, e.g. to call the user's `map` function on a
whole batch (batch before map): it must be traced again for the batched input. The Dataset
objects the builder returned still hold it (each transformation keeps a wrapper with the Python
function and its input structure), so we walk them and index the functions by graph name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipediag.backends.tf import tf
from pipediag.builder.objects import dataset_objects


@dataclass(frozen=True)
class UserFunction:
    name: str  # the graph function's name, e.g. __inference_Dataset_map_decode_example_20
    python: Callable[..., Any]  # what the user passed to map()/filter()/...
    input_structure: Any  # the element spec the function was traced for


def _wrappers(obj: Any):
    """Function wrappers held by one Dataset object (duck-typed: TensorFlow's
    StructuredFunctionWrapper keeps `_func`, `_input_structure` and the traced `function`)."""
    for value in vars(obj).values():
        if hasattr(value, "_func") and hasattr(value, "_input_structure") and hasattr(value, "function"):
            yield value


def user_functions(dataset) -> dict[str, UserFunction]:
    """Graph function name -> the user's Python function, for every transformation reachable
    from `dataset`. Datasets rebuilt from a graph have none; the result is then empty."""
    found: dict[str, UserFunction] = {}
    for ds in dataset_objects(dataset):
        for wrapper in _wrappers(ds):
            try:
                name = wrapper.function.name
            except (AttributeError, ValueError):
                continue
            name = name.decode() if isinstance(name, bytes) else str(name)
            found[name] = UserFunction(name, wrapper._func, wrapper._input_structure)
    return found


def closure_values(fn: Any):
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            continue


def find_generator(fn: Any, depth: int = 3) -> Callable[..., Any] | None:
    """The user's generator (the callable given to `Dataset.from_generator`), found from the
    function TensorFlow wraps it in (`flat_map_fn`, whose helpers close over the state object
    that holds the generator as `_generator`); None when it is not there."""
    todo = [(fn, 0)]
    seen: set[int] = set()
    while todo:
        obj, level = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        generator = getattr(obj, "_generator", None)
        if generator is not None and callable(generator) and hasattr(obj, "get_next_id"):
            return generator
        if level < depth and callable(obj):
            todo.extend((value, level + 1) for value in closure_values(obj))
    return None


def generator_name(fn: Any, depth: int = 3) -> str | None:
    """The name of the user's generator behind `Dataset.from_generator` (find_generator)."""
    generator = find_generator(fn, depth)
    if generator is None:
        return None
    return getattr(generator, "__name__", None) or type(generator).__name__


def generator_names(dataset) -> dict[str, str]:
    """Graph function name -> the name of the user's generator, for every `from_generator`
    reachable from `dataset`."""
    names = {}
    for name, function in user_functions(dataset).items():
        found = generator_name(function.python)
        if found is not None:
            names[name] = found
    return names


# Ops that draw random numbers of the shape given in one of their inputs (that input's index).
# Other random ops (RandomShuffle, RandomCrop, SampleDistortedBoundingBox, Multinomial, ...) act on
# the whole tensor they are given: batched, they would act on the whole batch.
_SHAPED_DRAWS = {
    "RandomUniform": 0, "RandomUniformInt": 0, "RandomStandardNormal": 0, "TruncatedNormal": 0,
    "StatelessRandomUniformV2": 0, "StatelessRandomNormalV2": 0, "StatelessTruncatedNormalV2": 0,
    "StatelessRandomUniformIntV2": 0, "StatelessRandomUniformFullIntV2": 0,
    "StatefulUniform": 2, "StatefulUniformInt": 2, "StatefulUniformFullInt": 2, "StatefulStandardNormalV2": 2,
    "StatefulTruncatedNormal": 2,
}
# A tf.random.Generator reads and advances its state: those ops draw nothing themselves.
_RNG_STATE_OPS = {"RngReadAndSkip", "RngSkip"}
_PASS_THROUGH = {"Identity", "Cast"}


def _is_random(op: str) -> bool:
    return op.startswith(("Random", "Stateful", "Rng", "StatelessRandom")) and not op.startswith(
        "StatefulPartitionedCall") or op in ("TruncatedNormal", "Multinomial", "SampleDistortedBoundingBox",
                                             "SampleDistortedBoundingBoxV2", "ParameterizedTruncatedNormal")


def _relaxed(structure: Any) -> Any:
    """The same structure with every tensor of unknown shape, so that `tf.shape(x)` is not folded
    into a constant when the function is traced (it is, wherever the shape is static)."""
    return tf.nest.map_structure(
        lambda spec: tf.TensorSpec(None, spec.dtype) if isinstance(spec, tf.TensorSpec) else spec, structure)


def _called(attrs) -> list[str]:
    names = []
    for attr in attrs.values():
        if attr.HasField("func"):
            names.append(attr.func.name)
        names.extend(f.name for f in attr.list.func)
    return names


def per_call_draws(function: UserFunction) -> str | None:
    """None when every random draw of the user's function is shaped like its input: the shape
    given to `tf.random.uniform` (and kin) is `tf.shape` of a value computed from the function's
    argument, so on a batch it is still one draw per element. Otherwise why not: a draw of a fixed
    shape (a scalar coin flip as in `random_flip_left_right`: one per call, so one per batch once
    batched), a random op that acts on its whole input (`random_crop`, `RandomShuffle`), a draw
    inside a nested function (a `cond` branch), or a function that cannot be traced for an input
    of unknown shape (what tells a folded `tf.shape` from a constant)."""
    try:
        concrete = tf.function(function.python).get_concrete_function(
            *_relaxed_args(function.input_structure))
    except Exception as error:  # noqa: BLE001 - any tracing failure means: cannot tell
        first = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        return f"its random draws cannot be told per element: it does not trace for an input of unknown shape ({first})"
    graph_def = concrete.graph.as_graph_def()
    library = {f.signature.name: f for f in graph_def.library.function}
    for f in library.values():
        for node in f.node_def:
            if _is_random(node.op) and node.op not in _RNG_STATE_OPS:
                return f"it draws random numbers inside a nested function ({node.op} in a cond or loop branch)"
    nodes = {n.name: n for n in graph_def.node}
    from_args = _from_args(nodes)
    for node in graph_def.node:
        if not _is_random(node.op) or node.op in _RNG_STATE_OPS:
            continue
        if node.op not in _SHAPED_DRAWS:
            return f"{node.op} acts on its whole input: on a batch it would act on the whole batch"
        shape = _source(nodes, node.input[_SHAPED_DRAWS[node.op]])
        if shape is None or shape.op != "Shape" or _input_name(shape.input[0]) not in from_args:
            what = "a constant shape" if shape is not None and shape.op == "Const" else "a shape not taken from its input"
            return (f"it draws random numbers of {what} ({node.op}): one draw per call, which on a batch would be "
                    "one per batch, not one per element")
    return None


def _relaxed_args(structure: Any) -> list[Any]:
    relaxed = _relaxed(structure)
    return list(relaxed) if isinstance(relaxed, tuple) else [relaxed]


def _input_name(ref: str) -> str:
    return ref.lstrip("^").split(":")[0]


def _source(nodes: dict, ref: str):
    node = nodes.get(_input_name(ref))
    while node is not None and node.op in _PASS_THROUGH and node.input:
        node = nodes.get(_input_name(node.input[0]))
    return node


def _from_args(nodes: dict) -> set[str]:
    """Nodes whose value depends on the function's arguments (placeholders), data inputs only."""
    out = {name for name, n in nodes.items() if n.op == "Placeholder"}
    changed = True
    while changed:
        changed = False
        for name, n in nodes.items():
            if name not in out and any(_input_name(i) in out for i in n.input if not i.startswith("^")):
                out.add(name)
                changed = True
    return out
