"""Are the elements of a dataset without a batch() stage already batches?

A generator of batches (the TensorFlow guide's `from_generator(ImageDataGenerator.flow_from_directory(...),
output_shapes=([32, 256, 256, 3], [32, 5]))`, a Keras `PyDataset`, arrays cut into batches by hand)
has no batch op in its graph. What shows it: a Keras batch iterator behind the generator, every
component starting with the same size while one has more dimensions than that (images and labels
of one batch), or that size being the --batch-size asked for. A scalar component, or components
of different leading sizes, show single examples. One component, or only vectors (a batch of
scalars or one sequence?), cannot be told apart: pipediag then asks.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pipediag.backends.tf import tf
from pipediag.builder.dataset import flatten_with_paths, path_text
from pipediag.builder.functions import closure_values, find_generator, user_functions

# Keras classes whose objects are, or make, iterators of whole batches.
_KERAS_BATCH_CLASSES = {"ImageDataGenerator", "Iterator", "DirectoryIterator", "NumpyArrayIterator",
                        "DataFrameIterator", "PyDataset", "Sequence", "TimeseriesGenerator"}
_KERAS_BATCH_METHODS = ("flow_from_directory", "flow_from_dataframe", "flow")

Shapes = Sequence[tuple[str, "tuple[int | None, ...] | None"]]  # (path, dims; None: rank unknown)


@dataclass(frozen=True)
class BatchReading:
    """What the elements' shapes (and the generator behind them) say."""

    batches: bool | None  # True: each element is a batch; False: a single example; None: cannot tell
    why: str  # what was seen, one clause
    rows: int | None = None  # the leading size every component shares
    strong: bool = False  # a Keras batch iterator, or the leading size is the --batch-size asked for
    needs_element: bool = False  # the element spec leaves leading sizes unknown: read an element

    def note(self, who: str) -> str:
        return (f"{who} has no batch() stage, but its elements are batches ({self.why}): pipediag treats each "
                f"element as a batch of {self.rows}; pass --unbatched if each element is one example")


def _shape_text(shapes: Shapes) -> str:
    def dims(d):
        return "?" if d is None else "[" + ",".join("None" if x is None else str(x) for x in d) + "]"

    return ", ".join(f"{path}: {dims(d)}" for path, d in shapes)


def read_shapes(shapes: Shapes, *, source: str | None = None, batch_size: int | None = None) -> BatchReading:
    """The reading of one element's component shapes. `source`: the Keras batch iterator behind
    the generator, if one was found (keras_source). `batch_size`: the --batch-size asked for."""
    seen = _shape_text(shapes)
    if not shapes or any(d is None for _, d in shapes):
        return BatchReading(None, f"components {seen or 'none'}: of unknown rank")
    scalars = [path for path, d in shapes if len(d) == 0]
    if scalars:
        return BatchReading(False, f"{scalars[0]} is a scalar ({seen}): a batch would have a leading dimension")
    leading = {d[0] for _, d in shapes}
    if None in leading:
        return BatchReading(None, f"components {seen}: leading sizes unknown until an element is read",
                            needs_element=True)
    if len(leading) > 1:
        return BatchReading(False, f"its components start with different sizes ({seen}): a batch's would agree")
    rows = leading.pop()
    if source is not None:
        return BatchReading(True, f"the generator is {source}, which yields batches; components {seen}", rows,
                            strong=True)
    if batch_size is not None and rows == batch_size:
        return BatchReading(True, f"every component starts with {rows}, the --batch-size asked for: {seen}", rows,
                            strong=True)
    if len(shapes) > 1 and any(len(d) > 1 for _, d in shapes):
        return BatchReading(True, f"every component starts with {rows}: {seen}", rows)
    what = "one component" if len(shapes) == 1 else "only vectors of one length (a batch of scalars, or one sequence?)"
    return BatchReading(None, f"{what}: {seen}")


def _name(path: tuple) -> str:
    return path_text(path) if path else "element"


def spec_shapes(element_spec: Any) -> list[tuple[str, tuple[int | None, ...] | None]]:
    """(path, dims) of each component of an element spec."""
    out = []
    for path, spec in flatten_with_paths(element_spec):
        shape = getattr(spec, "shape", None)
        out.append((_name(path), None if shape is None or shape.rank is None else tuple(shape.as_list())))
    return out


def value_shapes(element: Any) -> list[tuple[str, tuple[int | None, ...] | None]]:
    """(path, dims) of each component of one element as produced (ragged dims stay None)."""
    out = []
    for path, value in flatten_with_paths(element):
        shape = getattr(value, "shape", None)
        dims = None if shape is None or getattr(shape, "rank", None) is None else tuple(tf.TensorShape(shape).as_list())
        out.append((_name(path), dims))
    return out


def keras_source(dataset: Any) -> str | None:
    """"Keras' flow_from_directory" (or the class) when a `from_generator` in the pipeline calls a
    Keras batch iterator; None otherwise. Read from the generator's own code and the objects it
    refers to, without calling it."""
    for function in user_functions(dataset).values():
        generator = find_generator(function.python)
        if generator is not None:
            found = _keras_in(generator)
            if found is not None:
                return found
    return None


def _keras_class(value: Any) -> str | None:
    for klass in type(value).__mro__:
        if klass.__module__.split(".")[0] in ("keras", "tf_keras") and klass.__name__ in _KERAS_BATCH_CLASSES:
            return type(value).__name__
    return None


def _keras_in(generator: Callable[..., Any]) -> str | None:
    owner = getattr(generator, "__self__", None)  # a bound method: from_generator(gen.flow_from_directory, ...)
    if owner is not None and _keras_class(owner) is not None:
        return f"Keras' {getattr(generator, '__name__', _keras_class(owner))}"
    if _keras_class(generator) is not None:
        return f"Keras' {_keras_class(generator)}"
    code = getattr(generator, "__code__", None)
    if not isinstance(code, types.CodeType):
        return None
    names = set(_code_names(code))
    values = list(closure_values(generator))
    values += [generator.__globals__[n] for n in names if n in getattr(generator, "__globals__", {})]
    classes = [c for c in map(_keras_class, values) if c is not None]
    method = next((m for m in _KERAS_BATCH_METHODS if m in names), None)
    if method is not None and (classes or method != "flow"):
        return f"Keras' {method}"
    iterators = [c for c in classes if c != "ImageDataGenerator"]
    return f"Keras' {iterators[0]}" if iterators else None


def _code_names(code: types.CodeType):
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):  # a generator expression or nested function inside it
            yield from _code_names(const)
