"""`pipediag report FILE`: print a saved diagnosis (or sweep) again, and re-render a diagnosis as
HTML or samples CSV."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_OK, add_output_arguments, check_outputs, write_outputs
from pipediag.errors import UsageError


def register(sub) -> None:
    r = sub.add_parser("report", help="print a saved diagnosis or sweep again; --html re-renders a diagnosis")
    r.add_argument("file", help="a JSON file written by diagnose --json or sweep --json")
    add_output_arguments(r, json=False)
    r.add_argument("--quiet", action="store_true", help="write the files only; print nothing")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.diagnosis import Diagnosis, read_data
    from pipediag.report.sweep import render_sweep
    from pipediag.report.terminal import render_diagnosis
    from pipediag.sweep import KIND as SWEEP, Sweep

    check_outputs(args)
    data = read_data(args.file)
    if data.get("kind") == SWEEP:
        if args.html or args.samples_csv:
            raise UsageError("--html and --samples-csv re-render diagnoses, not sweeps",
                             "run 'pipediag report' on a file written by 'pipediag diagnose --json'")
        if not args.quiet:
            out.print(render_sweep(Sweep.from_dict(data)))
        return EXIT_OK
    diagnosis = Diagnosis.from_dict(data)
    written = write_outputs(diagnosis, args)
    if not args.quiet:
        out.print(render_diagnosis(diagnosis))
        for path in written:
            err.print(f"wrote {path}", style="dim", markup=False, highlight=False)
    return EXIT_OK
