"""`pipediag env`: what pipediag sees — TensorFlow, devices, NVML, GPUs, CPUs, memory, warnings."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_OK


def register(sub) -> None:
    e = sub.add_parser("env", help="what pipediag sees: TensorFlow, devices, NVML, GPUs, CPUs, memory")
    e.add_argument("--json", metavar="FILE", help="also write it as JSON")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.diagnosis import write_json
    from pipediag.environment import collect
    from pipediag.report.environment import render_environment

    env = collect(deep=True)
    out.print(render_environment(env))
    if args.json:
        write_json(env.to_dict(), args.json)
    return EXIT_OK
