"""What several subcommands share: argument types, report outputs, the rich progress display,
exit codes."""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from pipediag.errors import OutputError, UsageError
from pipediag.records.kinds import FAILED, INTERRUPTED, STALLED
from pipediag.records.options import RunOptions

EXIT_OK, EXIT_USER_CODE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_SLOWER = 3  # compare --fail-if-slower: B is slower than A by more than the limit, with confidence
EXIT_STALLED = 4  # no batch (or no step) for --stall-timeout: the partial report is still written
EXIT_TERMINATED = 143  # SIGTERM (128 + 15), e.g. from `timeout` or a job scheduler: as Ctrl-C otherwise


def exit_code_for(status: str) -> int:
    """A finished command's exit code from its result's status (interrupted: see cli.main for SIGTERM)."""
    return {INTERRUPTED: EXIT_INTERRUPTED, STALLED: EXIT_STALLED, FAILED: EXIT_USER_CODE}.get(status, EXIT_OK)


def options_from_args(args: argparse.Namespace, **more) -> RunOptions:
    """The RunOptions a command line gives: the step (--model/--step, loaded here), the builder's
    --arg, batching, the sampling rate and the stall timeout; `more`: what the command adds
    (label, max_seconds, gpus). A --precision (sweep) is the Keras policy the model is built under."""
    from pipediag.builder import target as targets

    model = step = None
    if args.model:
        from pipediag.steps.precision import built_under

        build = targets.load_callable(args.model)
        model = built_under(getattr(args, "precision", None),
                            lambda: targets.call_user(build, {}, "model builder"))
    if args.step:
        step = targets.call_user(targets.load_callable(args.step), {}, "step builder")
    return RunOptions(
        model=model, step=step, builder_kwargs=targets.parse_kwargs(args.arg),
        batch_size=getattr(args, "batch_size", None), batched=args.batched, batch_format=args.batch_format,
        sample_hz=args.sample_hz, step_label=args.model or args.step, stall_timeout_s=args.stall_timeout, **more,
    )


def with_progress(args: argparse.Namespace, err: Console, call, display=None):
    """`call(progress)` under a progress display on stderr (`display`, by default RichProgress);
    `call(None)` with --quiet."""
    if args.quiet:
        return call(None)
    with (display or RichProgress)(err) as progress:
        return call(progress)


_Number = TypeVar("_Number", int, float)


def _positive(text: str, kind: Callable[[str], _Number], what: str, must: str) -> _Number:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(must)
    return value


def comma_ints(text: str) -> tuple[int, ...]:
    """`16,32,64` -> (16, 32, 64), empty parts ignored; ValueError when a part is not an integer
    (each option says what it wants in its own words)."""
    return tuple(int(part) for part in text.split(",") if part.strip())


def positive_int_list(text: str, not_ints: str, not_positive: str) -> tuple[int, ...]:
    """`16,32,64` -> (16, 32, 64); an argparse error in the option's own words when a part is not
    an integer (`not_ints`), or when none is given or one is not positive (`not_positive`)."""
    try:
        values = comma_ints(text)
    except ValueError:
        raise argparse.ArgumentTypeError(not_ints) from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(not_positive)
    return values


def positive_ints(text: str) -> list[int]:
    """`1,2,4` -> [1, 2, 4]."""
    return list(positive_int_list(text, f"{text!r} is not a comma-separated list of integers",
                                  "give positive integers, e.g. 1,2,4"))


def positive_float(text: str) -> float:
    return _positive(text, float, "a number", "must be positive")


def positive_int(text: str) -> int:
    return _positive(text, int, "an integer", "must be a positive integer")


def add_output_arguments(p: argparse.ArgumentParser, json: bool = True, save_alias: bool = False,
                         samples_csv: bool = True) -> None:
    """The files a result can be written to; shared by diagnose, compare, sweep, scale and report.
    `save_alias`: also accept --save for --json (to keep a baseline for 'pipediag compare --baseline
    FILE'). `samples_csv`: offer --samples-csv (a diagnosis's samples, per mode). Each takes `-` for
    standard output (the report then goes to standard error)."""
    if json:
        names = ("--json", "--save") if save_alias else ("--json",)
        p.add_argument(*names, dest="json", metavar="FILE",
                       help="write the diagnosis as JSON (schema_version 2); - for standard output"
                       + ("; --save is the same, e.g. to keep a baseline for 'pipediag compare --baseline FILE'"
                          if save_alias else ""))
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report with charts (- for standard output)")
    if samples_csv:
        p.add_argument("--samples-csv", metavar="FILE",
                       help="write every CPU/GPU sample with its time and mode as CSV (- for standard output)")


# `-` for a file option: standard output. The report then goes to standard error, so that
# `pipediag diagnose ... --json - | jq .verdict` reads the JSON alone.
STDOUT = "-"
FILE_OPTIONS = ("json", "html", "samples_csv", "diff")


def flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def stdout_options(args: argparse.Namespace) -> list[str]:
    """The file options given as `-` (standard output); a UsageError when more than one is: their
    contents would run together."""
    given = [o for o in FILE_OPTIONS if getattr(args, o, None) == STDOUT]
    if len(given) > 1:
        names = " and ".join(f"{flag(o)} -" for o in given)
        raise UsageError(f"{names}: only one output can go to standard output",
                         f"write the others to files, e.g. {flag(given[1])} out.{given[1].split('_')[-1]}")
    return given


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse unusable output paths before a long run, not after it."""
    stdout_options(args)
    for option in ("json", "html", "samples_csv"):
        path = getattr(args, option, None)
        if path and path != STDOUT and os.path.isdir(path):
            example = os.path.join(path, "samples.csv" if option == "samples_csv" else f"run.{option}")
            raise UsageError(f"{flag(option)} {path} is a folder", f"give a file name, e.g. {flag(option)} {example}")
        if path and path != STDOUT:
            check_writable(path, flag(option))
    if getattr(args, "html", None):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError("--html needs matplotlib, which is not installed",
                             "pip install matplotlib (pipediag lists it as a dependency)") from None


def check_writable(path: str, flag: str) -> None:
    """A device, FIFO or descriptor name (`/dev/stdout`) must be writable itself; a regular file
    (a symbolic link: its target) must be writable if it exists, and its folder, or the nearest
    part of it that exists (pipediag creates the rest), must be a folder this process may write in."""
    from pipediag.records.files import resolve

    try:
        target, in_place = resolve(path)
    except OSError as error:
        raise UsageError(f"{flag} {path}: {error.strerror}", "give a path whose symbolic links lead to a file") from None
    if in_place or os.path.isfile(target):
        if not os.access(target, os.W_OK):
            raise UsageError(f"{flag} {path}: {target} is not writable", "choose a file you can write")
        if in_place:
            return
    folder = os.path.dirname(target)
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise UsageError(f"{flag} {path}: {folder} is a file, not a folder", "give a path inside a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: the folder {folder} is not writable", "choose a folder you can write in")


def write_file(text: str, path: str) -> None:
    """`text` to the file `path` (see records.files.write_text), or to standard output for `-`."""
    from pipediag.records.files import write_text

    if path != STDOUT:
        write_text(text, path)
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as error:
        if error.errno == errno.EPIPE:  # the reader went away (`| head`): no second error at exit
            _stdout_to_devnull()
        raise OutputError("standard output", error) from error


def _stdout_to_devnull() -> None:
    """What Python's docs advise after EPIPE on stdout: what is still buffered goes nowhere,
    instead of a second BrokenPipeError when the interpreter flushes it at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def write_outputs(result, args: argparse.Namespace) -> list[str]:
    """Write every file asked for (JSON, HTML, samples CSV), each whole or not at all (or in place:
    a device, a FIFO, `-` for standard output; see `write_file`); return their paths.
    `result`: a diagnosis, comparison, sweep or scale result (the HTML page fits its kind; the
    samples CSV is a diagnosis's). Called for interrupted and stalled runs too: a partial report
    is still a report. A file that cannot be written does not stop the others: they are written,
    then the first failure is raised (an `OutputError` naming its file)."""
    written, failed = _write_each(result, args)
    if failed:
        raise failed[0]
    return written


def _write_each(result, args: argparse.Namespace) -> tuple[list[str], list[OutputError]]:
    def page() -> str:
        from pipediag.report.html.pages import render_page

        return render_page(result)

    def samples() -> str:
        from pipediag.report.samples_csv import format_samples_csv

        return format_samples_csv(result)

    def strict_json() -> str:
        from pipediag.records.files import json_text

        return json_text(result.to_dict())

    jobs = (("json", strict_json), ("html", page), ("samples_csv", samples))
    written: list[str] = []
    failed: list[OutputError] = []
    for option, text in jobs:
        path = getattr(args, option, None)
        if not path:
            continue
        try:
            write_file(text(), path)
            written.append(path)
        except OutputError as error:
            failed.append(error)
    return written, failed


def print_and_write(result, report, args: argparse.Namespace, out, err, *, name_files: bool = True) -> None:
    """Write every file asked for, print the report, then name the files written (on stderr, so
    stdout holds the report alone). `name_files=False` leaves the names out. A file that could
    not be written is raised after the report is printed: the measurement is not lost with it."""
    written, failed = _write_each(result, args)
    out.print(report)
    if name_files:
        for path in written:
            if path == STDOUT:
                continue
            err.print(f"wrote {path}", style="dim", markup=False, highlight=False)
    if failed:
        for error in failed[1:]:
            err.print(f"[bold red]error:[/bold red] {error.message}", highlight=False)
        raise failed[0]


class RichProgress:
    """The library's Progress callback, drawn on stderr (so stdout stays clean): one bar per mode
    (its time cap as the total), and an open-ended bar with a clock for every other phase —
    building the dataset, the first batch (a shuffle buffer may fill for long), building the
    step, tuning (a cache may be filled) — so no long wait is silent."""

    def __init__(self, console: Console):
        self.bars = Progress(
            TextColumn("{task.description:<24}"), BarColumn(), TextColumn("{task.fields[steps]:>11}"),
            TimeElapsedColumn(), console=console, transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self._phase: TaskID | None = None

    def __enter__(self) -> RichProgress:
        self.bars.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._finish_all()
        self.bars.__exit__(*exc)

    def _finish_phase(self) -> None:
        if self._phase is not None:
            self.bars.update(self._phase, total=1, completed=1)
            self.bars.stop_task(self._phase)
            self._phase = None

    def _finish_all(self) -> None:
        self._finish_phase()
        for task in self.tasks.values():
            self.bars.update(task, completed=self.bars.tasks[task].total)
            self.bars.stop_task(task)

    def phase(self, text: str) -> None:
        self._finish_phase()
        if not text.endswith(" mode"):  # modes get their own bar with a known total
            self._phase = self.bars.add_task(text, total=None, steps="")

    def note(self, text: str) -> None:
        """A line said once, in full, above the bars (where a first batch waits)."""
        self.bars.console.print(text, markup=False, highlight=False)

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None:
        if name not in self.tasks:
            self._finish_all()
            self.tasks[name] = self.bars.add_task(f"{name} mode", total=cap_s, steps="0 steps")
        self.bars.update(self.tasks[name], completed=min(elapsed_s, cap_s), steps=f"{steps} steps")


def scale_command(args: argparse.Namespace) -> str:
    """The `pipediag scale` command line for the target and step options of a diagnose run."""
    parts = ["pipediag", "scale"]
    parts.append("--demo" if getattr(args, "demo", False) else args.target)
    if getattr(args, "data_dir", None):
        parts += ["--data-dir", args.data_dir]
    if getattr(args, "split", None):
        parts += ["--split", args.split]
    if args.model:
        parts += ["--model", args.model]
    if args.step:
        parts += ["--step", args.step]
    if args.batch_size:
        parts += ["--batch-size", str(args.batch_size)]
    for arg in args.arg:
        parts += ["--arg", arg]
    if args.batched is not None:
        parts.append("--batched" if args.batched else "--unbatched")
    if args.batch_format != "tf":
        parts += ["--batch-format", args.batch_format]
    if getattr(args, "gpus", None):
        parts += ["--gpus", args.gpus]
    parts += ["--workers", "1,2,4", "--accelerators", "1,8"]
    return shlex.join(parts)


# The fixes whose code tells the user to measure tf.data service first, on the line the fix
# catalog starts with this text: the library does not know the command line it was started
# with, so the CLI writes the user's own there (a library caller keeps the catalog's example).
QUOTES_SCALE_COMMAND = ("tf_data_service", "cpu_quota")
SCALE_LINE = "#   pipediag scale "


def quote_scale_command(diagnosis, command: str):
    """The diagnosis with its tf.data service and CPU quota fixes quoting `command`."""
    def quoted(fix):
        if fix.kind not in QUOTES_SCALE_COMMAND:
            return fix
        lines = [f"#   {command}" if line.startswith(SCALE_LINE) else line for line in fix.code.split("\n")]
        return replace(fix, code="\n".join(lines))

    fixes = tuple(quoted(f) for f in diagnosis.fixes)
    if all(new is old for new, old in zip(fixes, diagnosis.fixes)):
        return diagnosis
    return replace(diagnosis, fixes=fixes)
