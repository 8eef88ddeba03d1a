"""`pipediag compare`: is B faster than A? A verdict with a 95% interval, and a CI gate.

    pipediag compare data.py:make_dataset data.py:make_dataset_v2 --model train.py:make_model
    pipediag compare data.py:make_dataset --arg-a cache=False --arg-b cache=True
    pipediag compare --baseline baseline.json data.py:make_dataset --fail-if-slower 5%
    pipediag compare --baseline node1.json node2.json     (two profiles from `pipediag baseline`)

Exit codes: 0 compared (whatever the verdict), 3 `--fail-if-slower` failed, 1 the user's code
failed, 2 usage error, 4 stalled (--stall-timeout), 130 interrupted (the partial report is
still printed and written after 4 and 130).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from pipediag.commands.common import (
    EXIT_OK,
    EXIT_SLOWER,
    add_output_arguments,
    check_outputs,
    exit_code_for,
    options_from_args,
    positive_float,
    print_and_write,
    with_progress,
)
from pipediag.commands.diagnose import add_target_arguments
from pipediag.errors import UsageError
from pipediag.records.kinds import COMPLETE


def percent(text: str) -> float:
    """'5%' or '5' -> 0.05."""
    raw = text.strip().removesuffix("%")
    try:
        value = float(raw) / 100.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage (write e.g. 5%)") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError("must be between 0% and 100%")
    return value


def rounds_cap(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 3:
        raise argparse.ArgumentTypeError("a comparison needs at least 3 rounds")
    return value


def register(sub) -> None:
    c = sub.add_parser(
        "compare", help="is B faster than A? interleaved rounds, a 95%% interval, a verdict, a CI gate",
        description="Compare pipeline B (the change) with pipeline A (the baseline), feeding the same step. "
        "Every ratio is B's throughput over A's.",
    )
    c.add_argument("specs", nargs="*", metavar="SPEC",
                   help="A B (two dataset builders); or one builder with --arg-a/--arg-b; or B with --baseline")
    c.add_argument("--baseline", metavar="FILE", help="A is a saved run: a file from 'pipediag diagnose --save FILE'; "
                   "or a machine profile from 'pipediag baseline --json FILE', then the one SPEC is another profile")
    c.add_argument("--arg-a", action="append", default=[], metavar="KEY=VALUE", help="keyword argument for A only")
    c.add_argument("--arg-b", action="append", default=[], metavar="KEY=VALUE", help="keyword argument for B only")
    add_target_arguments(c, max_seconds=(60.0, "time cap for the whole comparison, in seconds"))
    c.add_argument("--max-rounds", type=rounds_cap, default=30, help="round cap (default: 30)")
    c.add_argument("--turn-seconds", type=positive_float, default=0.5,
                   help="shortest turn of one side in a round (default: 0.5; longer for slow steps)")
    c.add_argument("--equivalence", type=percent, default=0.05, metavar="P",
                   help="stop early once B is shown to be within ±P of A (default: 5%%)")
    c.add_argument("--fail-if-slower", type=percent, metavar="P",
                   help="exit with code 3 when B is slower than A by more than P (e.g. 5%%), with 95%% confidence")
    c.add_argument("--json", "--save", dest="json", metavar="FILE", help="write the comparison as JSON; - for standard output")
    add_output_arguments(c, json=False, samples_csv=False)


class RoundsProgress:
    """Progress of a comparison: one bar against the time cap, with the running estimate."""

    def __init__(self, console: Console):
        self.bars = Progress(TextColumn("{task.description:<10}"), BarColumn(), TextColumn("{task.fields[estimate]}"),
                             TimeElapsedColumn(), console=console, transient=False)
        self.task = None

    def __enter__(self) -> RoundsProgress:
        self.bars.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.bars.__exit__(*exc)

    def phase(self, text: str) -> None:
        self.bars.console.print(f"[dim]… {text}[/dim]")

    def round(self, done: int, elapsed_s: float, cap_s: float, interval) -> None:
        estimate = "" if interval is None else f"B/A {interval.ratio:.3f} [{interval.low:.3f}, {interval.high:.3f}]"
        if self.task is None:
            self.task = self.bars.add_task("rounds", total=cap_s, estimate="")
        self.bars.update(self.task, completed=min(elapsed_s, cap_s), description=f"round {done}",
                         estimate=estimate or self.bars.tasks[0].fields["estimate"])


def _is_profile(path: str) -> bool:
    """Is --baseline a machine profile? A file that cannot be read is left to the saved-run path,
    which says what is wrong with it."""
    from pipediag.errors import UsageError
    from pipediag.records.files import load_json
    from pipediag.results.baseline import is_baseline

    try:
        return is_baseline(load_json(path))
    except UsageError:
        return False


def _kwargs(args_list: list[str], option: str) -> dict:
    from pipediag.builder import target as targets

    return targets.parse_kwargs(args_list, option)


def _label(spec: str, args_list: list[str]) -> str:
    return " ".join([spec, *args_list])


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.analysis.compare import LookPlan
    from pipediag.api.compare import compare
    from pipediag.builder import target as targets
    from pipediag.modes.compare import ComparePlan
    from pipediag.report.terminal.compare import render_comparison

    specs = args.specs
    if args.baseline and _is_profile(args.baseline):
        from pipediag.commands.baseline import compare_profiles_command

        return compare_profiles_command(args, out, err)
    if args.baseline:
        if len(specs) != 1:
            raise UsageError("with --baseline, give exactly one SPEC: the pipeline B to compare with the saved run",
                             "pipediag compare --baseline run.json data.py:make_dataset")
        if args.arg_a:
            raise UsageError("--arg-a has no effect with --baseline: A is the saved run", "use --arg or --arg-b")
        a_spec, b_spec = None, specs[0]
    elif len(specs) == 2:
        a_spec, b_spec = specs
    elif len(specs) == 1 and (args.arg_a or args.arg_b):
        a_spec = b_spec = specs[0]
    else:
        raise UsageError(
            "compare needs two pipelines: A B, one builder with --arg-a/--arg-b, or --baseline FILE with B",
            "pipediag compare data.py:v1 data.py:v2; to see the noise, compare a builder with itself: "
            "pipediag compare data.py:v1 data.py:v1",
        )
    check_outputs(args)
    options = options_from_args(args)  # --max-seconds: the plan's
    common = dict(options.builder_kwargs)
    options = replace(options, builder_kwargs=None)
    a_kwargs = {**common, **_kwargs(args.arg_a, "--arg-a")}
    b_kwargs = {**common, **_kwargs(args.arg_b, "--arg-b")}
    a = targets.load_callable(a_spec) if a_spec else None
    b = targets.load_callable(b_spec)
    plan = ComparePlan(looks=LookPlan(max_rounds=args.max_rounds), max_seconds=args.max_seconds,
                       segment_seconds=args.turn_seconds)
    asked = dict(
        baseline=args.baseline, a_kwargs=a_kwargs, b_kwargs=b_kwargs, plan=plan, equivalence=args.equivalence,
        fail_if_slower=args.fail_if_slower,
        label_a=_label(a_spec, args.arg + args.arg_a) if a_spec else None,
        label_b=_label(b_spec, args.arg + args.arg_b),
    )
    comparison = with_progress(args, err, lambda p: compare(a, b, options=replace(options, progress=p), **asked),
                               RoundsProgress)
    print_and_write(comparison, render_comparison(comparison), args, out, err)
    if comparison.error is not None:  # the user's code raised mid-rounds: its traceback after the partial report
        raise comparison.error
    if comparison.status != COMPLETE:
        return exit_code_for(comparison.status)
    return EXIT_SLOWER if comparison.regression else EXIT_OK
