"""Errors a user can cause, each with a HINT that says what to do.

`UsageError` is a mistake in how pipediag was called (exit code 2). `UserCodeError` wraps an
exception raised by the user's own code — the dataset builder, the model builder or the step —
and keeps its traceback with pipediag's own frames trimmed away (exit code 1). `MeasurementError`
is the other way round: pipediag's own measuring code failed, and says so.
"""

from __future__ import annotations

import os
import re
import sysconfig
import traceback
from types import TracebackType

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class PipediagError(Exception):
    """Base class: a message for the user and a hint on what to do about it."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nHINT: {self.hint}"


class UsageError(PipediagError):
    """pipediag was called wrongly: a bad spec, a missing file, an unbatched dataset."""

    exit_code = 2


class OutputError(PipediagError):
    """A file pipediag was asked to write could not be written (full disk, no permission, a path
    through a file). The file is absent or as it was before; files written before it stay."""

    exit_code = 2

    def __init__(self, path: str, error: OSError):
        reason = error.strerror or str(error) or type(error).__name__
        super().__init__(f"could not write {path}: {reason}",
                         "choose a writable path, or free space on that disk; files written before this one "
                         "are kept, and this one is absent or as it was")
        self.path = path
        self.error = error


class UserCodeError(PipediagError):
    """The user's own code raised. `where` says which part: builder, model, step, pipeline.

    A `SystemExit` (the user's `sys.exit(3)`, or an argparse or absl in their file reading
    pipediag's own command line) is one too: said in one line with its code and where it was
    called, and pipediag exits 1, never with the user's code (3 would read as
    `compare --fail-if-slower` failing)."""

    exit_code = 1

    def __init__(self, where: str, error: BaseException, hint: str | None = None):
        self.where = where
        self.error = error
        if isinstance(error, SystemExit):
            message = f"your {where} exited: sys.exit({error.code!r}){_called_at(error)}"
            hint = EXIT_HINT  # what to do about an exit, wherever it came from
        else:
            message = f"your {where} raised {type(error).__name__}: {_first_line(error)}"
        super().__init__(message, hint)

    @property
    def exited(self) -> bool:
        """The user's code called sys.exit (its traceback adds nothing to the line that says where)."""
        return isinstance(self.error, SystemExit)

    def user_traceback(self) -> str:
        """The traceback of the user's error with pipediag's own frames left out."""
        return format_user_traceback(self.error)


EXIT_HINT = ("pipediag calls your functions inside its own process, so a sys.exit there ends the run: "
             "return or raise instead; a script's command-line parsing (argparse, absl) belongs under "
             "`if __name__ == \"__main__\":`, and --arg KEY=VALUE passes values to the builder")


def _called_at(error: BaseException) -> str:
    """` at file.py:12`: the innermost frame of the user's own files (not Python's or an installed
    library's: argparse's exit is not where the user called it), or nothing when there is none."""
    frames = trimmed_traceback(error.__traceback__)
    libraries = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "purelib", "platlib")})
    own = [f for f in frames if not os.path.abspath(f.filename).startswith(libraries)] or frames
    if not own:
        return ""
    return f" at {os.path.basename(own[-1].filename)}:{own[-1].lineno}"


class MeasurementError(PipediagError):
    """One of pipediag's own measurements failed on code that is pipediag's, not the user's (the
    hand-over's feed and device copy): a fault in pipediag. The diagnosis goes on without it."""

    def __init__(self, what: str, error: BaseException):
        self.what = what
        self.error = error
        super().__init__(
            f"pipediag's own {what} raised {type(error).__name__}: {_first_line(error)}",
            "this is a fault in pipediag, not in your code; the diagnosis goes on without this measurement. "
            "Please report it with this message",
        )


_FRAME = re.compile(r'File "(.+)", line (\d+)')


def error_line(error: BaseException) -> str:
    """`TypeError: first line of its message`, for a note. An error raised while tf.function
    traces the user's code ("in user code:", its frames, then the original error's own line)
    gives that last line, with the user's line it came from."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if lines and lines[0] == "in user code:":
        frames = [m for m in map(_FRAME.match, lines) if m]
        where = f" (at {frames[-1].group(1)}:{frames[-1].group(2)})" if frames else ""
        return f"{lines[-1]}{where}"
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "(no message)"


def _is_own_frame(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)


def trimmed_traceback(tb: TracebackType | None) -> list[traceback.FrameSummary]:
    """Frames of `tb` that are not pipediag's own (the user's and their libraries')."""
    return [f for f in traceback.extract_tb(tb) if not _is_own_frame(f.filename)]


def format_user_traceback(error: BaseException) -> str:
    frames = trimmed_traceback(error.__traceback__)
    lines = ["Traceback (most recent call last, pipediag's own frames left out):\n"]
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(error), error)
    return "".join(lines)
