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
    seen: set[int] = set()
    todo = [dataset]
    while todo:
        ds = todo.pop()
        if id(ds) in seen:
            continue
        seen.add(id(ds))
        for wrapper in _wrappers(ds):
            try:
                name = wrapper.function.name
            except (AttributeError, ValueError):
                continue
            name = name.decode() if isinstance(name, bytes) else str(name)
            found[name] = UserFunction(name, wrapper._func, wrapper._input_structure)
        for value in vars(ds).values():
            if isinstance(value, tf.data.Dataset):
                todo.append(value)
            elif isinstance(value, (list, tuple)):
                todo.extend(v for v in value if isinstance(v, tf.data.Dataset))
    return found


def _closure_values(fn: Any):
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            continue


def generator_name(fn: Any, depth: int = 3) -> str | None:
    """The user's generator behind `Dataset.from_generator`, found from the function TensorFlow
    wraps it in (`flat_map_fn`, whose helpers close over the state object that holds the
    generator as `_generator`); None when it is not there."""
    todo = [(fn, 0)]
    seen: set[int] = set()
    while todo:
        obj, level = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        generator = getattr(obj, "_generator", None)
        if generator is not None and callable(generator) and hasattr(obj, "get_next_id"):
            name = getattr(generator, "__name__", None) or type(generator).__name__
            return "<lambda>" if name == "<lambda>" else name
        if level < depth and callable(obj):
            todo.extend((value, level + 1) for value in _closure_values(obj))
    return None


def generator_names(dataset) -> dict[str, str]:
    """Graph function name -> the name of the user's generator, for every `from_generator`
    reachable from `dataset`."""
    names = {}
    for name, function in user_functions(dataset).items():
        found = generator_name(function.python)
        if found is not None:
            names[name] = found
    return names
