"""Resolving `file.py:function` and `package.module:function` specs, and calling them.

No TensorFlow here: loading the user's file and calling their function is plain Python. A spec
that cannot be found is a UsageError; an exception raised while importing or running the user's
code is a UserCodeError that keeps their traceback.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipediag.errors import UsageError, UserCodeError

SPEC_FORMS = "'path/to/file.py:function' or 'package.module:function'"


@dataclass(frozen=True)
class Spec:
    text: str
    path: str | None  # a .py file, or None for an importable module
    module: str | None
    attr: str  # may be dotted: Class.method

    @property
    def label(self) -> str:
        return self.text


def parse_spec(text: str) -> Spec:
    if ":" not in text:
        raise UsageError(f"'{text}' is not a spec", f"write it as {SPEC_FORMS}")
    where, attr = text.rsplit(":", 1)  # rsplit: a Windows path has a colon of its own
    if not where or not attr or not all(part.isidentifier() for part in attr.split(".")):
        raise UsageError(f"'{text}' is not a spec", f"write it as {SPEC_FORMS}")
    if where.endswith(".py") or os.sep in where or "/" in where:
        return Spec(text=text, path=where, module=None, attr=attr)
    if not all(part.isidentifier() for part in where.split(".")):
        raise UsageError(f"'{where}' is neither a .py file nor a module name", f"write it as {SPEC_FORMS}")
    return Spec(text=text, path=None, module=where, attr=attr)


def _import_file(path: str) -> Any:
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise UsageError(f"no such file: {path}", f"check the path; it is read relative to {os.getcwd()}")
    name = "pipediag_user_" + os.path.splitext(os.path.basename(full))[0]
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == full:
        return sys.modules[name]
    folder = os.path.dirname(full)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # so the file can import its neighbours, as `python file.py` would
    module_spec = importlib.util.spec_from_file_location(name, full)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:  # sys.exit in their code too: errors.UserCodeError
        del sys.modules[name]
        raise UserCodeError(f"file {path}", error, "fix the error above; pipediag imports the file as Python does") from error
    return module


def _import_module(name: str) -> Any:
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name and name.startswith(error.name):
            raise UsageError(
                f"no module named '{error.name}'",
                "install the package, run from its folder, or give a file path instead",
            ) from error
        raise UserCodeError(f"module {name}", error) from error
    except (Exception, SystemExit) as error:  # sys.exit in their code too: errors.UserCodeError
        raise UserCodeError(f"module {name}", error) from error


def load_callable(spec: Spec | str) -> Callable[..., Any]:
    if isinstance(spec, str):
        spec = parse_spec(spec)
    module = _import_file(spec.path) if spec.path else _import_module(spec.module)
    obj: Any = module
    for part in spec.attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
            raise UsageError(
                f"'{spec.attr}' is not defined in {spec.path or spec.module}",
                f"functions there: {', '.join(names) or 'none'}",
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"'{spec.text}' is a {type(obj).__name__}, not a function", f"point at a function: {SPEC_FORMS}")
    return obj


_WORDS = {"true": True, "false": False, "none": None, "null": None}
_OPENERS = {"[": "list", "(": "tuple", "{": "dict or set", "'": "string", '"': "string"}


def parse_kwarg(text: str) -> tuple[str, Any]:
    """`key=value` with the value read as a Python literal when it is one (3, 0.5, True, 'x').
    true/false/none in any case are the booleans and None (as other CLIs spell them: `false` as a
    string would be truthy). A value that opens like a list, tuple, dict or quoted string must
    parse; any other word is passed as a string."""
    if "=" not in text:
        raise UsageError(f"--arg '{text}' has no '='", "write --arg key=value")
    key, raw = text.split("=", 1)
    if not key.isidentifier():
        raise UsageError(f"--arg '{text}': '{key}' is not a parameter name", "write --arg key=value")
    if raw.strip().lower() in _WORDS:
        return key, _WORDS[raw.strip().lower()]
    try:
        return key, ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as error:
        kind = _OPENERS.get(raw.strip()[:1])
        if kind is not None:
            reason = getattr(error, "msg", None) or str(error) or type(error).__name__
            raise UsageError(
                f"--arg '{text}': the value looks like a Python {kind} but does not parse ({reason})",
                f"write a Python literal, e.g. --arg \"{key}=[1, 2]\" (quote it for the shell), "
                f"or --arg \"{key}='text'\" for a string",
            ) from None
        return key, raw


def parse_kwargs(texts: list[str] | tuple[str, ...], option: str = "--arg") -> dict[str, Any]:
    """Every `key=value` of an option given several times; a key given twice is a UsageError (the
    last would silently win)."""
    out: dict[str, Any] = {}
    for text in texts:
        key, value = parse_kwarg(text)
        if key in out:
            raise UsageError(f"{option} {key} is given twice ({key}={out[key]!r} and {key}={value!r})",
                             f"give each parameter once: {option} {key}=VALUE")
        out[key] = value
    return out


def accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def missing_parameters(fn: Callable[..., Any], kwargs: dict[str, Any]) -> list[str]:
    """The parameters of `fn` without a default that `kwargs` does not give."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return []
    required = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                inspect.Parameter.KEYWORD_ONLY)
    return [name for name, p in params.items() if p.kind in required and p.default is p.empty and name not in kwargs]


def _missing_hint(missing: list[str], what: str) -> str:
    if what != "dataset builder":
        return (f"pipediag calls the {what} with no arguments: give {', '.join(missing)} a default, "
                "or point at a function without parameters that calls it")
    hints = []
    if "batch_size" in missing:
        hints.append("pass --batch-size N (pipediag passes it to a builder that takes batch_size)")
    others = [name for name in missing if name != "batch_size"]
    if others:
        hints.append("pass " + " ".join(f"--arg {name}=VALUE" for name in others))
    return "; ".join(hints)


def call_user(fn: Callable[..., Any], kwargs: dict[str, Any], what: str) -> Any:
    """Call the user's function with keyword arguments it accepts; a wrong or missing one is a
    UsageError (before the call: its TypeError would name no pipediag option)."""
    name = getattr(fn, "__name__", fn)
    unknown = [k for k in kwargs if not accepts(fn, k)]
    if unknown:
        params = ", ".join(inspect.signature(fn).parameters) or "none"
        raise UsageError(f"{what} {name!s} takes no parameter {', '.join(unknown)}", f"its parameters: {params}")
    missing = missing_parameters(fn, kwargs)
    if missing:
        raise UsageError(f"{what} {name!s} needs {', '.join(missing)}, which pipediag was not given",
                         _missing_hint(missing, what))
    try:
        return fn(**kwargs)
    except KeyboardInterrupt:
        raise
    except (Exception, SystemExit) as error:  # sys.exit in their code too: errors.UserCodeError
        raise UserCodeError(what, error) from error
