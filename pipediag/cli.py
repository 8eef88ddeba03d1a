"""The `pipediag` command. Thin: parse arguments, call the library, print what it returns.

Exit codes: 0 diagnosis done, 1 the user's code failed, 2 usage error, 130 interrupted (a
partial report is still printed and written).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from pipediag._version import __version__
from pipediag.errors import PipediagError, UsageError, UserCodeError

EXIT_OK, EXIT_USER_CODE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep our HINT format
        raise UsageError(message, f"see '{self.prog} --help'")


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="pipediag", description="Why is my GPU idle? Diagnose tf.data input pipelines.")
    parser.add_argument("--version", action="version", version=f"pipediag {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_ArgumentParser)

    d = sub.add_parser("diagnose", help="run the modes and say what limits training")
    d.add_argument("target", nargs="?", help="dataset builder: file.py:function or package.module:function")
    d.add_argument("--demo", action="store_true", help="diagnose a built-in example (no code of yours needed)")
    who = d.add_mutually_exclusive_group()
    who.add_argument("--model", metavar="SPEC", help="function returning a compiled Keras model")
    who.add_argument("--step", metavar="SPEC", help="function returning step(batch), any framework")
    d.add_argument("--batch-size", type=_positive_int, help="passed to the builder if it takes batch_size; "
                   "otherwise pipediag batches an unbatched dataset")
    d.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE", help="keyword argument for the builder")
    d.add_argument("--batched", action="store_true", help="elements are already batches (e.g. a generator of batches)")
    d.add_argument("--batch-format", choices=["tf", "numpy"], default="tf", help="what --step receives (default: tf)")
    d.add_argument("--max-seconds", type=_positive_float, default=10.0, help="time cap per mode (default: 10)")
    d.add_argument("--sample-hz", type=_positive_float, default=10.0, help="CPU/GPU sampling rate (default: 10)")
    d.add_argument("--ram-budget-mb", type=_positive_int, help="most memory a cache may take (default: half of free)")
    d.add_argument("--json", metavar="FILE", help="write the diagnosis as JSON (schema_version 1)")
    d.add_argument("--quiet", action="store_true", help="no progress bars; the report only")

    e = sub.add_parser("env", help="what pipediag sees: TensorFlow, devices, NVML, GPUs, CPUs, memory")
    e.add_argument("--json", metavar="FILE", help="also write it as JSON")

    r = sub.add_parser("report", help="print a saved diagnosis again")
    r.add_argument("file", help="a JSON file written by diagnose --json")
    return parser


class _RichProgress:
    def __init__(self, console: Console):
        self.bars = Progress(
            TextColumn("{task.description:<11}"), BarColumn(), TextColumn("{task.fields[steps]:>6} steps"),
            TimeElapsedColumn(), console=console, transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self.status = console

    def __enter__(self) -> _RichProgress:
        self.bars.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for task in self.tasks.values():
            self.bars.update(task, completed=self.bars.tasks[task].total)
        self.bars.__exit__(*exc)

    def phase(self, text: str) -> None:
        if not text.endswith(" mode"):
            self.bars.console.print(f"[dim]… {text}[/dim]")

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None:
        if name not in self.tasks:
            for other in self.tasks.values():
                self.bars.update(other, completed=self.bars.tasks[other].total)
            self.tasks[name] = self.bars.add_task(name, total=cap_s, steps=0)
        self.bars.update(self.tasks[name], completed=min(elapsed_s, cap_s), steps=steps)


def _diagnose(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag import api
    from pipediag.builder import target as targets
    from pipediag.diagnosis import write_json
    from pipediag.modes.runner import StopRule
    from pipediag.report.terminal import render_diagnosis

    if args.demo == bool(args.target):
        raise UsageError("give a TARGET or --demo (not both)", "pipediag diagnose path/to/data.py:make_dataset")
    if args.demo:
        from pipediag import demo

        builder, label = demo.make_dataset, "pipediag.demo:make_dataset (built-in example)"
    else:
        builder, label = targets.load_callable(args.target), args.target
    kwargs = dict(targets.parse_kwarg(a) for a in args.arg)
    model = step = None
    if args.model:
        model = targets.call_user(targets.load_callable(args.model), {}, "model builder")
    if args.step:
        step = targets.call_user(targets.load_callable(args.step), {}, "step builder")
    rule = StopRule(max_seconds=args.max_seconds)
    options = dict(
        model=model, step=step, builder_kwargs=kwargs, batch_size=args.batch_size, batched=args.batched,
        batch_format=args.batch_format, stop_rule=rule, sample_hz=args.sample_hz,
        ram_budget_bytes=args.ram_budget_mb * 2**20 if args.ram_budget_mb else None,
        label=label, step_label=args.model or args.step,
    )
    if args.quiet:
        diagnosis = api.diagnose(builder, **options)
    else:
        with _RichProgress(err) as progress:
            diagnosis = api.diagnose(builder, progress=progress, **options)
    if args.json:
        write_json(diagnosis.to_dict(), args.json)
    out.print(render_diagnosis(diagnosis))
    if args.json:
        err.print(f"[dim]wrote {args.json}[/dim]")
    return EXIT_INTERRUPTED if diagnosis.status == "interrupted" else EXIT_OK


def _env(args: argparse.Namespace, out: Console) -> int:
    from pipediag.diagnosis import write_json
    from pipediag.environment import collect
    from pipediag.report.environment import render_environment

    env = collect()
    out.print(render_environment(env))
    if args.json:
        write_json(env.to_dict(), args.json)
    return EXIT_OK


def _report(args: argparse.Namespace, out: Console) -> int:
    from pipediag.diagnosis import read_json
    from pipediag.report.terminal import render_diagnosis

    out.print(render_diagnosis(read_json(args.file)))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    out = Console()
    err = Console(stderr=True)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        if args.command == "diagnose":
            return _diagnose(args, out, err)
        if args.command == "env":
            return _env(args, out)
        return _report(args, out)
    except UserCodeError as error:
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
