"""`pipediag report FILE`: print a saved diagnosis (or scale result) again."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_OK


def register(sub) -> None:
    r = sub.add_parser("report", help="print a saved diagnosis or scale result again")
    r.add_argument("file", help="a JSON file written by diagnose --json or scale --json")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.diagnosis import Diagnosis, load_json
    from pipediag.report.scale import render_scale
    from pipediag.report.terminal import render_diagnosis
    from pipediag.scaling import KIND as SCALE, ScaleResult

    data = load_json(args.file)
    if data.get("kind") == SCALE:
        out.print(render_scale(ScaleResult.from_dict(data)))
    else:
        out.print(render_diagnosis(Diagnosis.from_dict(data)))
    return EXIT_OK
