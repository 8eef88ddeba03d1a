"""`pipediag report FILE`: print a saved diagnosis, comparison, sweep, scale result or baseline profile again, and
re-render it as HTML (any kind) or, for a diagnosis, its samples as CSV."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_OK, add_output_arguments, check_outputs, print_and_write, write_outputs
from pipediag.errors import UsageError


def register(sub) -> None:
    r = sub.add_parser("report", help="print a saved diagnosis, comparison, sweep or scale result again; --html re-renders any of them")
    r.add_argument("file", help="a JSON file written by diagnose, compare, sweep or scale --json")
    add_output_arguments(r, json=False)
    r.add_argument("--quiet", action="store_true", help="write the files only; print nothing")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.records.files import load_json
    from pipediag.report.terminal.compare import render_comparison
    from pipediag.report.terminal.diagnose import render_diagnosis
    from pipediag.report.terminal.scale import render_scale
    from pipediag.report.terminal.sweep import render_sweep
    from pipediag.results.compare import Comparison, is_comparison
    from pipediag.results.diagnose import Diagnosis
    from pipediag.results.scale import KIND as SCALE
    from pipediag.results.scale import ScaleResult
    from pipediag.results.sweep import KIND as SWEEP
    from pipediag.results.sweep import Sweep

    check_outputs(args)
    data = load_json(args.file)
    from pipediag.report.terminal.baseline import render_profile
    from pipediag.results.baseline import BaselineProfile, is_baseline

    if is_baseline(data):
        result, render = BaselineProfile.from_dict(data), render_profile
    elif data.get("kind") == SWEEP:
        result, render = Sweep.from_dict(data), render_sweep
    elif data.get("kind") == SCALE:
        result, render = ScaleResult.from_dict(data), render_scale
    elif is_comparison(data):
        result, render = Comparison.from_dict(data), render_comparison
    else:
        result, render = Diagnosis.from_dict(data), render_diagnosis
    if args.samples_csv and not isinstance(result, Diagnosis):
        raise UsageError(f"--samples-csv writes a diagnosis's samples by mode; {args.file} holds a {data.get('kind')}",
                         "use --samples-csv on a file written by 'pipediag diagnose --json' (--html works for every kind)")
    if args.quiet:
        write_outputs(result, args)
    else:  # a file that cannot be written is raised after the report, as after a run
        print_and_write(result, render(result), args, out, err)
    return EXIT_OK
