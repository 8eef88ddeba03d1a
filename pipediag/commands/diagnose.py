"""`pipediag diagnose`: run the modes and say what limits training."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from rich.console import Console

from pipediag.commands.common import (
    add_output_arguments,
    check_outputs,
    exit_code_for,
    options_from_args,
    positive_float,
    positive_int,
    print_and_write,
    with_progress,
)
from pipediag.errors import UsageError
from pipediag.records.options import RunOptions


def add_target_arguments(p: argparse.ArgumentParser, *, batch_size: bool = True,
                         max_seconds: tuple[float, str] = (10.0, "time cap per mode")) -> None:
    """The options that say what to run: shared by diagnose and the commands built on it.
    `batch_size=False` for commands that set batch sizes themselves (sweep); `max_seconds`: the
    default and meaning of --max-seconds for this command."""
    who = p.add_mutually_exclusive_group()
    who.add_argument("--model", metavar="SPEC", help="function returning a compiled Keras model")
    who.add_argument("--step", metavar="SPEC", help="function returning step(batch), any framework")
    if batch_size:
        p.add_argument("--batch-size", type=positive_int, help="passed to the builder if it takes batch_size; "
                       "otherwise pipediag batches an unbatched dataset")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE", help="keyword argument for the builder")
    batching = p.add_mutually_exclusive_group()
    batching.add_argument("--batched", action="store_const", const=True, default=None,
                          help="elements are already batches (e.g. a generator of batches); by default, without a "
                          "batch() in the pipeline, pipediag reads that from the elements' shapes")
    batching.add_argument("--unbatched", action="store_const", const=False, dest="batched",
                          help="elements are single examples, even where their shapes look like batches: "
                          "pipediag batches them with --batch-size")
    p.add_argument("--batch-format", choices=["tf", "numpy", "dlpack"], default="tf",
                   help="what --step receives: tf tensors, numpy arrays (for JAX/PyTorch steps), or dlpack objects "
                   "(jnp.from_dlpack / torch.from_dlpack, no copy) (default: tf)")
    p.add_argument("--max-seconds", type=positive_float, default=max_seconds[0],
                   help=f"{max_seconds[1]} (default: {max_seconds[0]:g})")
    p.add_argument("--sample-hz", type=positive_float, default=10.0, help="CPU/GPU sampling rate (default: 10)")
    p.add_argument("--quiet", action="store_true", help="for CI logs: no progress bars or messages, the report only")
    p.add_argument("--stall-timeout", type=positive_float, metavar="SECONDS",
                   help="no batch (or a step that does not return) for this long ends the run as stalled: the "
                   "modes measured before are kept and written, exit code 4 (default: 10x the slowest batch seen, "
                   "at least 60 s; 120 s for the first batch, longer while a shuffle buffer is seen filling; after 30 s "
                   "without a first batch, each stage is read fresh and where it waits is said)")


def add_gpus_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpus", metavar="N,N|UUID,...", help="the GPUs the job uses, to sample and report: NVML "
                   "indices or UUIDs (default: CUDA_VISIBLE_DEVICES when set, else every GPU)")


def check_gpus_argument(args: argparse.Namespace) -> None:
    """A --gpus that names no GPU is a usage error before anything slow is imported."""
    from pipediag.samples.selection import GpuSelection

    if getattr(args, "gpus", None) is not None:
        GpuSelection.choose(args.gpus)


def add_dataset_arguments(p: argparse.ArgumentParser, command: str) -> None:
    """What builds the dataset: a TARGET, --demo, and tfds:NAME's --data-dir and --split."""
    p.add_argument("target", nargs="?", help="dataset builder: file.py:function or package.module:function; "
                   "or tfds:NAME, a tensorflow-datasets dataset already on disk")
    p.add_argument("--demo", action="store_true", help=f"{command} a built-in example (no code of yours needed)")
    p.add_argument("--data-dir", metavar="DIR", help="tfds:NAME targets: the tfds data dir it was prepared in "
                   "(default: tfds' own); nothing is ever downloaded")
    p.add_argument("--split", help="tfds:NAME targets: the split to read (default: train)")


def check_dataset_arguments(args: argparse.Namespace, command: str) -> None:
    """Usage errors in the dataset arguments, before anything slow is imported."""
    from pipediag.builder import tfds_target

    if args.demo == bool(args.target):
        raise UsageError("give a TARGET or --demo (not both)", f"pipediag {command} path/to/data.py:make_dataset")
    if (args.data_dir or args.split) and not tfds_target.is_tfds_target(args.target):
        raise UsageError("--data-dir and --split are for tfds:NAME targets",
                         "pass your builder's own arguments with --arg data_dir=... ")


def load_dataset(args: argparse.Namespace) -> tuple[Any, str]:
    """The dataset builder and its label, from checked dataset arguments."""
    # Import TensorFlow through pipediag before the user's file does, so its start-up log lines
    # are filtered (seen on the H200: a builder file importing TF first let them through).
    import pipediag.backends.tf  # noqa: F401
    from pipediag.builder import target as targets
    from pipediag.builder import tfds_target
    if args.demo:
        from pipediag import demo

        return demo.make_dataset, "pipediag.demo:make_dataset (built-in example)"
    if tfds_target.is_tfds_target(args.target):
        return tfds_target.load(args.target, args.data_dir, args.split), args.target
    return targets.load_callable(args.target), args.target


def register(sub) -> None:
    d = sub.add_parser("diagnose", help="run the modes and say what limits training")
    add_dataset_arguments(d, "diagnose")
    add_target_arguments(d)
    add_gpus_argument(d)
    d.add_argument("--ram-budget-mb", type=positive_int, help="most memory a cache may take (default: half of free)")
    depth = d.add_mutually_exclusive_group()
    depth.add_argument("--thorough", action="store_true", help="longer windows for the per-stage anatomy and the "
                       "per-change ablation, plus all-but-one ablation runs (slower)")
    depth.add_argument("--quick", action="store_true", help="the verdict and the slow stage only: no tuned mode, "
                       "so no measured fixes, and each mode over at most 3 s once it has 10 steps (faster)")
    add_output_arguments(d, save_alias=True)


def checked_target(args: argparse.Namespace, command: str) -> tuple[Any, RunOptions]:
    """The checks diagnose and scale make of their command line before anything runs, then the
    dataset builder and the RunOptions."""
    check_dataset_arguments(args, command)
    check_outputs(args)
    check_gpus_argument(args)
    builder, label = load_dataset(args)
    return builder, options_from_args(args, max_seconds=args.max_seconds, label=label, gpus=args.gpus)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.api import diagnose as api
    from pipediag.commands.common import quote_scale_command, scale_command
    from pipediag.report.terminal.diagnose import render_diagnosis
    from pipediag.samples.cpu import process_age_s

    builder, options = checked_target(args, "diagnose")
    asked = dict(ram_budget_bytes=args.ram_budget_mb * 2**20 if args.ram_budget_mb else None, thorough=args.thorough,
                 quick=args.quick)
    startup_s = process_age_s()  # Python, the imports and the builder's module, before the diagnosis
    diagnosis = with_progress(args, err, lambda p: api.diagnose(builder, options=replace(options, progress=p), **asked))
    diagnosis = quote_scale_command(replace(diagnosis, startup_s=startup_s), scale_command(args))
    # Files first: on an interrupted run they are what the user keeps.
    print_and_write(diagnosis, render_diagnosis(diagnosis), args, out, err, name_files=not args.quiet)
    if diagnosis.error is not None:  # the user's code raised mid-run: its traceback after the partial report
        raise diagnosis.error
    return exit_code_for(diagnosis.status)
