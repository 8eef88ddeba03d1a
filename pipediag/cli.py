"""The `pipediag` command. Thin: parse arguments, call a command module, turn errors into exit codes.

Exit codes: 0 done, 1 the user's code failed, 2 usage error, 3 `compare --fail-if-slower` failed,
4 stalled (no batch for --stall-timeout), 130 interrupted by Ctrl-C, 143 by SIGTERM (a partial report
is still printed and written in all three). Subcommands live in `pipediag/commands/`, one module each.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import threading
from collections.abc import Sequence

from rich.console import Console

from pipediag import backends
from pipediag._version import __version__
from pipediag.commands import baseline, compare, diagnose, env, fix, report, run, scale, sweep
from pipediag.commands.common import (
    EXIT_INTERRUPTED,
    EXIT_STALLED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    EXIT_USER_CODE,
    stdout_options,
)
from pipediag.errors import PipediagError, UsageError, UserCodeError
from pipediag.records.stall import Stalled

COMMANDS = {"diagnose": diagnose, "compare": compare, "sweep": sweep, "scale": scale, "env": env, "report": report,
            "fix": fix, "baseline": baseline, "run": run}


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would exit 2 itself; keep our HINT format
        raise UsageError(message, f"see '{self.prog} --help'")


EPILOG = ("exit codes: 0 done, 1 your code failed, 2 usage error, 3 compare --fail-if-slower failed, "
          "4 stalled (no batch for --stall-timeout seconds), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM); "
          "after 4, 130 and 143 the partial report is still printed and every file asked for is written")


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="pipediag", description="Why is my GPU idle? Diagnose tf.data input pipelines.",
                             epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"pipediag {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_ArgumentParser)
    for module in COMMANDS.values():
        module.register(sub)
    return parser


class _Terminate:
    """SIGTERM (what `timeout`, `kill` and job schedulers send) handled like Ctrl-C: it raises
    KeyboardInterrupt in the main thread, so every command stops its modes, keeps what was
    measured and writes its files; `received` turns the exit code into 143. Installed only from
    the main thread and only over the default handler (a host program keeps its own)."""

    def __init__(self) -> None:
        self.received = False
        self._previous = None

    def __enter__(self) -> _Terminate:
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            self._previous = signal.signal(signal.SIGTERM, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)

    def _handler(self, signum, frame) -> None:
        self.received = True
        raise KeyboardInterrupt

    _handler.pipediag_interrupt = True  # scale's own handler chains to it (scale.py, _Interrupts)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command. Called as the command (argv None), a process with a thread still stuck
    in the user's code after a stall, or with threads the user's code started and left running,
    ends without waiting for them (see `_exit_now`)."""
    if argv is None:
        backends.freeze_imported_objects = True
    with _Terminate() as terminate:
        code = _main(argv)
    if terminate.received and code == EXIT_INTERRUPTED:
        code = EXIT_TERMINATED
    if argv is None:
        from pipediag.modes.watchdog import stuck_threads

        left = threads_left()
        if left:
            sys.stderr.write(f"note: your code left {len(left)} thread(s) running ({', '.join(left)}); "
                             "pipediag ends without waiting for them\n")
        if stuck_threads() or left:
            _exit_now(code)
        _spare_the_last_collection()
    return code


def _spare_the_last_collection() -> None:
    """The process ends next: move every object into the collector's permanent generation, so
    the interpreter's shutdown does not walk TensorFlow's object graph once more to find cycles
    that the operating system is about to free anyway. That walk was most of a second at the end
    of every command (0.73 s from a script's last line to the process' end after a small tf.data
    loop, 0.08 s with this; the 2-core development machine, 2026-12-04). Shutdown is otherwise the
    same: atexit functions run, streams flush, modules are torn down. Only in the command's own
    process (argv None): a caller of `main` keeps its collector as it was."""
    gc.freeze()


def threads_left() -> list[str]:
    """The threads a normal exit would wait for: every live non-daemon thread but the main one,
    by name and what it runs. pipediag's own threads are daemons, so these are the user's (a
    builder's prefetcher, a logger, an experiment tracker) or a library's they called."""
    names = []
    for thread in threading.enumerate():
        if thread is threading.main_thread() or thread.daemon or not thread.is_alive():
            continue
        target = getattr(thread, "_target", None)
        runs = getattr(target, "__qualname__", None)
        names.append(thread.name if runs is None or runs in thread.name else f"{thread.name}: {runs}")
    return names


def _exit_now(code: int) -> None:
    """End the process at once. After a stall a thread is still inside the user's py_function or
    step. A normal exit would wait for it: interpreter shutdown runs TensorFlow's finalizers,
    and an iterator's destructor waits for its in-flight get_next, which never returns; and it
    joins every non-daemon thread, which the user's code may have started and never stops. By now
    every file is written (atomically, before the report was printed) and the report is printed,
    so nothing is lost by skipping the finalizers: flush what Python buffers, then os._exit."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _run_command(args: argparse.Namespace, out: Console, err: Console) -> int:
    """The command. pipediag's own code never calls sys.exit there, so a SystemExit is the user's
    (a sys.exit in a function pipediag calls where no call site says which part it was): their
    code exited, which pipediag reports as their code failing (exit 1), never with their code."""
    try:
        return COMMANDS[args.command].run(args, out, err)
    except SystemExit as error:
        raise UserCodeError("code", error) from error


def _main(argv: Sequence[str] | None) -> int:
    out = Console()
    err = Console(stderr=True)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        if stdout_options(args):  # a file goes to standard output (`--json -`): the report to stderr
            out = err
        return _run_command(args, out, err)
    except UserCodeError as error:
        if not error.exited:  # a sys.exit's line says where it was called; its traceback adds nothing
            err.print(error.user_traceback(), markup=False, highlight=False)
        err.print(f"[bold red]error:[/bold red] {error.message}", highlight=False)
        err.print(f"HINT: {error.hint or 'fix the error in your code shown above; pipediag frames are left out'}",
                  markup=False, highlight=False)
        return EXIT_USER_CODE
    except PipediagError as error:
        err.print(f"[bold red]error:[/bold red] {error.message}", highlight=False)
        if error.hint:
            err.print(f"HINT: {error.hint}", markup=False, highlight=False)
        return error.exit_code
    except KeyboardInterrupt:
        err.print("[bold red]interrupted[/bold red] before any mode had finished: nothing to report")
        return EXIT_INTERRUPTED
    except Stalled as stall:  # before any mode ran (a first batch that never came): nothing to report
        err.print(f"[bold red]error:[/bold red] stalled before anything was measured: {stall}", markup=True,
                  highlight=False)
        err.print("HINT: the pipeline produced no batch in time; check the reads it waits on, or raise "
                  "--stall-timeout if a first batch really takes this long", markup=False, highlight=False)
        return EXIT_STALLED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
