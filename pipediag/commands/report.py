"""`pipediag report FILE`: print a saved diagnosis, comparison, sweep or scale result again;
re-render a diagnosis as HTML or samples CSV."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_OK, add_output_arguments, check_outputs, write_outputs
from pipediag.errors import UsageError


def register(sub) -> None:
    r = sub.add_parser("report", help="print a saved diagnosis, comparison, sweep or scale result again; --html re-renders a diagnosis")
    r.add_argument("file", help="a JSON file written by diagnose, compare, sweep or scale --json")
    add_output_arguments(r, json=False)
    r.add_argument("--quiet", action="store_true", help="write the files only; print nothing")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.comparison import Comparison, is_comparison
    from pipediag.diagnosis import Diagnosis, load_json
    from pipediag.report.comparison import render_comparison
    from pipediag.report.scale import render_scale
    from pipediag.report.sweep import render_sweep
    from pipediag.report.terminal import render_diagnosis
    from pipediag.scaling import KIND as SCALE, ScaleResult
    from pipediag.sweep import KIND as SWEEP, Sweep

    check_outputs(args)
    data = load_json(args.file)
    other = None
    if data.get("kind") == SWEEP:
        other = render_sweep(Sweep.from_dict(data))
    elif data.get("kind") == SCALE:
        other = render_scale(ScaleResult.from_dict(data))
    elif is_comparison(data):
        other = render_comparison(Comparison.from_dict(data))
    if other is not None:
        if args.html or args.samples_csv:
            raise UsageError("--html and --samples-csv re-render diagnoses, not comparisons, sweeps or scale results",
                             "run 'pipediag report' with them on a file written by 'pipediag diagnose --json'")
        if not args.quiet:
            out.print(other)
        return EXIT_OK
    diagnosis = Diagnosis.from_dict(data)
    written = write_outputs(diagnosis, args)
    if not args.quiet:
        out.print(render_diagnosis(diagnosis))
        for path in written:
            err.print(f"wrote {path}", style="dim", markup=False, highlight=False)
    return EXIT_OK
