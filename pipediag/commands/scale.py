"""`pipediag scale`: the pipeline on tf.data service, per worker count, and how many workers it takes."""

from __future__ import annotations

import argparse
from dataclasses import replace

from rich.console import Console

from pipediag.commands.common import (
    add_output_arguments,
    exit_code_for,
    positive_float,
    positive_int,
    positive_ints,
    print_and_write,
    with_progress,
)
from pipediag.commands.diagnose import (
    add_dataset_arguments,
    add_gpus_argument,
    add_target_arguments,
    checked_target,
)


def register(sub) -> None:
    s = sub.add_parser("scale", help="measure the pipeline on tf.data service and plan the workers")
    add_dataset_arguments(s, "scale")
    add_target_arguments(s)
    add_gpus_argument(s)
    where = s.add_argument_group("the service")
    where.add_argument("--workers", type=positive_ints, metavar="N,N,...",
                       help="local worker counts to measure (default: 1, 2, 4, ... up to this host's cores)")
    where.add_argument("--worker-cores", type=positive_int, default=1,
                       help="cores each local worker is pinned to (default: 1)")
    where.add_argument("--service", metavar="grpc://HOST:PORT", help="use this existing dispatcher; start nothing")
    where.add_argument("--remote-workers", type=positive_int, metavar="N",
                       help="how many workers the --service deployment has (for its per-worker rate)")
    where.add_argument("--processing-mode", choices=["parallel_epochs", "distributed_epoch"], default="parallel_epochs",
                       help="parallel_epochs: each worker runs the whole dataset; distributed_epoch: the source is "
                            "split among workers (default: parallel_epochs)")
    where.add_argument("--start-timeout", type=positive_float, default=120.0,
                       help="seconds to wait for local servers to start (default: 120)")
    plan = s.add_argument_group("the plan")
    plan.add_argument("--accelerators", type=positive_ints, default=[1, 8], metavar="N,N,...",
                      help="accelerator counts to plan for (default: 1,8)")
    plan.add_argument("--compute-rate", type=positive_float, metavar="BATCHES_PER_SEC",
                      help="batches/s one accelerator takes (default: the step's free-input rate measured here)")
    s.add_argument("--json", metavar="FILE", help="write the result as JSON (schema_version 2, kind scale); - for standard output")
    add_output_arguments(s, json=False, samples_csv=False)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.api import scale as scaling
    from pipediag.report.terminal.scale import render_scale

    builder, options = checked_target(args, "scale")
    asked = dict(
        workers=args.workers, worker_cores=args.worker_cores, service=args.service,
        remote_workers=args.remote_workers, processing_mode=args.processing_mode,
        accelerators=tuple(args.accelerators), compute_rate=args.compute_rate, start_timeout_s=args.start_timeout,
    )

    # Ctrl-C and SIGTERM (a job scheduler, `kill`) end the run alike: scale() stops the servers
    # and returns what was measured, and the partial report is printed and written.
    result = with_progress(args, err, lambda p: scaling.scale(builder, options=replace(options, progress=p), **asked))
    print_and_write(result, render_scale(result), args, out, err)
    if result.error is not None:  # a server died or the user's code raised: after the partial report
        raise result.error
    return exit_code_for(result.status)
