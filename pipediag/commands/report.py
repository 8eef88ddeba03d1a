"""`pipediag report FILE`: print a saved diagnosis (or sweep) again."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_OK


def register(sub) -> None:
    r = sub.add_parser("report", help="print a saved diagnosis or sweep again")
    r.add_argument("file", help="a JSON file written by diagnose --json or sweep --json")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.diagnosis import Diagnosis, read_data
    from pipediag.report.sweep import render_sweep
    from pipediag.report.terminal import render_diagnosis
    from pipediag.sweep import KIND as SWEEP, Sweep

    data = read_data(args.file)
    if data.get("kind") == SWEEP:
        out.print(render_sweep(Sweep.from_dict(data)))
    else:
        out.print(render_diagnosis(Diagnosis.from_dict(data)))
    return EXIT_OK
