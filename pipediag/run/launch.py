"""Running the user's script as `__main__`, as `python SCRIPT ARGS` or `python -m MODULE ARGS`
would: `runpy`, `sys.argv` set to the script's, its folder (or, for -m, the working folder)
first on `sys.path`. How it ended is returned, never raised."""

from __future__ import annotations

import os
import runpy
import sys
from dataclasses import dataclass
from types import TracebackType

from pipediag.errors import UsageError
from pipediag.run.site import is_user_file

FINISHED, STOPPED, EXITED, RAISED, INTERRUPTED = "finished", "stopped", "exited", "raised", "interrupted"


@dataclass(frozen=True)
class ScriptTarget:
    script: str | None  # a .py file, or None with `module`
    module: str | None
    args: tuple[str, ...] = ()

    def check(self) -> None:
        if (self.script is None) == (self.module is None):
            raise UsageError("give a SCRIPT or -m MODULE", "pipediag run train.py --epochs 3")
        if self.script is not None and not os.path.isfile(self.script):
            raise UsageError(f"no such script: {self.script}", "give the path of your training script")


@dataclass(frozen=True)
class Ending:
    """How the script ended: it finished, pipediag stopped it, it called sys.exit (`code`),
    raised (`error`, its traceback starting at the script's own frame), or was interrupted."""

    how: str
    code: int | str | None = None
    error: BaseException | None = None

    def text(self) -> str:
        if self.how == EXITED:
            return f"called sys.exit({self.code!r})"
        if self.how == RAISED:
            return f"raised {type(self.error).__name__}"
        return {FINISHED: "finished", STOPPED: "was stopped by pipediag", INTERRUPTED: "was interrupted"}[self.how]


def launch(target: ScriptTarget, stop_type: type[BaseException]) -> Ending:
    """Run the script; `stop_type` is the exception pipediag raises inside it to end it."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    if target.script is not None:
        sys.argv = [target.script, *target.args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(target.script)))
    else:
        sys.argv = [target.module, *target.args]  # run_module sets argv[0] to the module's file
        sys.path.insert(0, os.getcwd())
    try:
        if target.script is not None:
            runpy.run_path(target.script, run_name="__main__")
        else:
            runpy.run_module(target.module, run_name="__main__", alter_sys=True)
    except stop_type:
        return Ending(STOPPED)
    except SystemExit as end:
        return Ending(EXITED, code=end.code)
    except KeyboardInterrupt:
        return Ending(INTERRUPTED)
    except Exception as error:  # noqa: BLE001 - the script's own error, reported with its traceback
        return Ending(RAISED, error=error.with_traceback(_from_script(error.__traceback__)))
    finally:
        sys.argv[:], sys.path[:] = saved_argv, saved_path
    return Ending(FINISHED)


def _from_script(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the first frame of the user's own code (runpy's frames left out)."""
    start = tb
    while start is not None and not is_user_file(start.tb_frame.f_code.co_filename):
        start = start.tb_next
    return start or tb
