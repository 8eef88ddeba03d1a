"""Errors a user can cause, each with a HINT that says what to do.

`UsageError` is a mistake in how pipediag was called (exit code 2). `UserCodeError` wraps an
exception raised by the user's own code — the dataset builder, the model builder or the step —
and keeps its traceback with pipediag's own frames trimmed away (exit code 1). `MeasurementError`
is the other way round: pipediag's own measuring code failed, and says so.
"""

from __future__ import annotations

import os
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
    """The user's own code raised. `where` says which part: builder, model, step, pipeline."""

    exit_code = 1

    def __init__(self, where: str, error: BaseException, hint: str | None = None):
        self.where = where
        self.error = error
        message = f"your {where} raised {type(error).__name__}: {_first_line(error)}"
        super().__init__(message, hint)

    def user_traceback(self) -> str:
        """The traceback of the user's error with pipediag's own frames left out."""
        return format_user_traceback(self.error)


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
