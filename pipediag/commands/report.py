"""`pipediag report FILE`: print a saved diagnosis again."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_OK


def register(sub) -> None:
    r = sub.add_parser("report", help="print a saved diagnosis again")
    r.add_argument("file", help="a JSON file written by diagnose --json")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.diagnosis import read_json
    from pipediag.report.terminal import render_diagnosis

    out.print(render_diagnosis(read_json(args.file)))
    return EXIT_OK
