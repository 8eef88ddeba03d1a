"""`pipediag report FILE`: print a saved diagnosis or comparison again."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_OK


def register(sub) -> None:
    r = sub.add_parser("report", help="print a saved diagnosis or comparison again")
    r.add_argument("file", help="a JSON file written by diagnose --json or compare --json")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.comparison import Comparison, is_comparison
    from pipediag.diagnosis import Diagnosis, load_json
    from pipediag.report.comparison import render_comparison
    from pipediag.report.terminal import render_diagnosis

    data = load_json(args.file)
    if is_comparison(data):
        out.print(render_comparison(Comparison.from_dict(data)))
    else:
        out.print(render_diagnosis(Diagnosis.from_dict(data)))
    return EXIT_OK
