"""`pipediag env`: what pipediag sees — TensorFlow's build and devices, NVML, the driver, each GPU's
compute capability, memory growth, XLA, JAX's and PyTorch's devices, CPUs, memory, the container's
limits — and the warnings they call for (each with what to do)."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_OK, STDOUT, check_writable, write_file


def register(sub) -> None:
    e = sub.add_parser("env", help="check the machine: TensorFlow's build and GPUs vs NVML's, the driver, compute "
                       "capability, memory growth, XLA, JAX/PyTorch devices, the container's limits")
    e.add_argument("--json", metavar="FILE", help="also write it as JSON (every fact, or null with its reason); - for "
                   "standard output (the report then goes to standard error)")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.records.files import json_text
    from pipediag.report.terminal.env import render_environment
    from pipediag.samples.environment import collect

    if args.json and args.json != STDOUT:
        check_writable(args.json, "--json")
    env = collect(deep=True)
    if args.json:
        write_file(json_text(env.to_dict()), args.json)
    out.print(render_environment(env))
    return EXIT_OK
