"""Where in the user's script a dataset was built: the innermost frame of the user's own code
when the Dataset object was created (its ops are created in the same call).

"The user's own code" is any frame whose file is neither pipediag's, nor the standard library's,
nor an installed package's: the interpreter's library folders, the user site (`pip install
--user`), any site-packages or dist-packages folder on sys.path, and wherever the frameworks
themselves were imported from (FRAMEWORKS: TensorFlow, Keras, JAX and their helpers). The last
matters where they are not in a site-packages folder (a folder on PYTHONPATH, a `pip install
--target`, a vendored tree): on the H200, TensorFlow's GPU build in /tmp/site (2026-12-03) had
Keras' and TensorFlow's own iterators hooked as the user's loops and every dataset "built at
tensorflow/python/data/ops/dataset_ops.py:4520"."""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import site
import sys
import sysconfig
import weakref
from dataclasses import dataclass
from typing import Any

_PIPEDIAG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# Top-level packages whose frames are never the user's, wherever they are installed.
FRAMEWORKS = ("tensorflow", "keras", "tf_keras", "tensorflow_datasets", "tensorflow_text", "tensorflow_io",
              "jax", "jaxlib", "flax", "optax", "numpy", "absl", "optree", "tree", "torch")


def _standard_paths() -> set[str]:
    paths = {p for key in ("stdlib", "platstdlib", "purelib", "platlib") if (p := sysconfig.get_paths().get(key))}
    try:
        paths.add(site.getusersitepackages())
    except (AttributeError, OSError):  # a stripped-down site module
        pass
    paths.update(p for p in sys.path if p and os.path.basename(os.path.normpath(p)) in ("site-packages", "dist-packages"))
    return paths


def _framework_paths(names: tuple[str, ...] = FRAMEWORKS) -> set[str]:
    """Where each framework package is (found, not imported: find_spec of a top-level name)."""
    paths = set()
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None:
            paths.update(spec.submodule_search_locations or ())
    return paths


def library_roots(standard: set[str] | None = None, frameworks: tuple[str, ...] = FRAMEWORKS) -> tuple[str, ...]:
    """The folders whose files are no user's code, each ending in a separator."""
    found = (_standard_paths() if standard is None else standard) | _framework_paths(frameworks)
    return tuple(sorted({os.path.abspath(p) + os.sep for p in found}))


@functools.lru_cache(maxsize=1)
def _libraries() -> tuple[str, ...]:
    return library_roots()


@dataclass(frozen=True)
class Site:
    """A place in the user's code: file, line and the function it is in (`<module>` at top level)."""

    file: str
    line: int
    function: str

    def text(self) -> str:
        where = "" if self.function == "<module>" else f" in {self.function}()"
        return f"{os.path.relpath(self.file)}:{self.line}{where}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Site:
        return cls(file=d["file"], line=int(d["line"]), function=d["function"])


def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    return not path.startswith(_PIPEDIAG) and not path.startswith(_libraries())


def user_site(depth: int = 1) -> Site | None:
    """The innermost frame of the user's code on the current stack, from `depth` frames up."""
    frame = sys._getframe(depth)
    while frame is not None:
        code = frame.f_code
        if is_user_file(code.co_filename):
            return Site(os.path.abspath(code.co_filename), frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None


def called_from_user(depth: int = 2) -> bool:
    """Whether the frame `depth` up (the caller of the hooked function) is the user's code: an
    iterator that Keras or TensorFlow makes for itself must stay theirs (it may be passed into a
    tf.function)."""
    frame = sys._getframe(depth)
    return frame is not None and is_user_file(frame.f_code.co_filename)


class Sites:
    """The construction site of every Dataset made while the hooks are in, by object (weakly)."""

    def __init__(self) -> None:
        self._sites: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def record(self, dataset: Any, site: Site | None) -> None:
        if site is not None:
            try:
                self._sites[dataset] = site
            except TypeError:  # not weakly referenceable: no site for it
                pass

    def of(self, dataset: Any) -> Site | None:
        try:
            return self._sites.get(dataset)
        except TypeError:
            return None


def _runs_nothing(node: ast.stmt) -> bool:
    """A top-level statement that runs nothing when the file is imported: imports, definitions,
    a docstring, constants and attribute look-ups, and the `if __name__ == "__main__":` block."""
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return not any(isinstance(n, (ast.Call, ast.Await, ast.Yield)) for n in ast.walk(node.value))
    if isinstance(node, ast.If):
        test = node.test
        return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
                and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))
    return False


def patch_target(site: dict[str, Any] | None) -> str:
    """The `file.py:function` that `pipediag fix` can patch for a `pipediag run` diagnosis whose
    training dataset was built at `site`; a UsageError saying why not when there is none."""
    from pipediag.errors import UsageError

    if not site:
        raise UsageError("this run did not record where its training dataset was built",
                         "apply the fixes in the report by hand, or pass --target file.py:function")
    where = Site.from_dict(site)
    by_hand = "apply the fixes in the report by hand"
    if where.function == "<module>":
        raise UsageError(f"the training dataset was built at the top level of the script ({where.text()}), not in a "
                         "function: pipediag fix patches a function that returns the dataset",
                         f"move the pipeline into `def make_dataset(): ... return ds`, run pipediag run again, "
                         f"then pipediag fix; or {by_hand}")
    try:
        with open(where.file, encoding="utf-8") as f:
            tree = ast.parse(f.read(), where.file)
    except (OSError, SyntaxError) as error:
        raise UsageError(f"cannot read {where.file}: {error}", by_hand) from None
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    function = functions.get(where.function)
    if function is None:
        raise UsageError(f"the training dataset was built in {where.function}() ({where.text()}), which is not a "
                         "top-level function of its file", f"{by_hand}, or pass --target file.py:function")
    args = function.args
    if len(args.defaults) < len(args.posonlyargs) + len(args.args) or None in args.kw_defaults:
        raise UsageError(f"{where.function}() takes arguments without defaults; pipediag fix rebuilds the dataset "
                         "by calling it", f"pass them with --arg KEY=VALUE, or {by_hand}")
    runs = next((n for n in tree.body if not _runs_nothing(n)), None)
    if runs is not None:
        raise UsageError(f"{os.path.relpath(where.file)} runs code when imported (line {runs.lineno}), and pipediag "
                         "fix imports it to rebuild the dataset: that would run your training",
                         "put the script's top-level code under `if __name__ == \"__main__\":`, or " + by_hand)
    return f"{where.file}:{where.function}"
