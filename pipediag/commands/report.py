"""`pipediag report FILE`: print a saved diagnosis again, and re-render it as HTML or samples CSV."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_OK, add_output_arguments, check_outputs, write_outputs


def register(sub) -> None:
    r = sub.add_parser("report", help="print a saved diagnosis again; --html re-renders it as a web page")
    r.add_argument("file", help="a JSON file written by diagnose --json")
    add_output_arguments(r, json=False)
    r.add_argument("--quiet", action="store_true", help="write the files only; print nothing")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.diagnosis import read_json
    from pipediag.report.terminal import render_diagnosis

    check_outputs(args)
    diagnosis = read_json(args.file)
    written = write_outputs(diagnosis, args)
    if not args.quiet:
        out.print(render_diagnosis(diagnosis))
        for path in written:
            err.print(f"wrote {path}", style="dim", markup=False, highlight=False)
    return EXIT_OK
