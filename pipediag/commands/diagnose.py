"""`pipediag diagnose`: run the modes and say what limits training."""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import EXIT_INTERRUPTED, EXIT_OK, RichProgress, positive_float, positive_int
from pipediag.errors import UsageError


def add_target_arguments(p: argparse.ArgumentParser) -> None:
    """The options that say what to run: shared by diagnose and the commands built on it."""
    who = p.add_mutually_exclusive_group()
    who.add_argument("--model", metavar="SPEC", help="function returning a compiled Keras model")
    who.add_argument("--step", metavar="SPEC", help="function returning step(batch), any framework")
    p.add_argument("--batch-size", type=positive_int, help="passed to the builder if it takes batch_size; "
                   "otherwise pipediag batches an unbatched dataset")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE", help="keyword argument for the builder")
    p.add_argument("--batched", action="store_true", help="elements are already batches (e.g. a generator of batches)")
    p.add_argument("--batch-format", choices=["tf", "numpy"], default="tf", help="what --step receives (default: tf)")
    p.add_argument("--max-seconds", type=positive_float, default=10.0, help="time cap per mode (default: 10)")
    p.add_argument("--sample-hz", type=positive_float, default=10.0, help="CPU/GPU sampling rate (default: 10)")
    p.add_argument("--quiet", action="store_true", help="no progress bars; the report only")


def register(sub) -> None:
    d = sub.add_parser("diagnose", help="run the modes and say what limits training")
    d.add_argument("target", nargs="?", help="dataset builder: file.py:function or package.module:function")
    d.add_argument("--demo", action="store_true", help="diagnose a built-in example (no code of yours needed)")
    add_target_arguments(d)
    d.add_argument("--ram-budget-mb", type=positive_int, help="most memory a cache may take (default: half of free)")
    d.add_argument("--json", metavar="FILE", help="write the diagnosis as JSON (schema_version 1)")


def load_step_options(args: argparse.Namespace) -> dict:
    """Resolve --model/--step/--arg into the keyword arguments `diagnose()` takes."""
    from pipediag.builder import target as targets

    model = step = None
    if args.model:
        model = targets.call_user(targets.load_callable(args.model), {}, "model builder")
    if args.step:
        step = targets.call_user(targets.load_callable(args.step), {}, "step builder")
    return dict(
        model=model, step=step, builder_kwargs=dict(targets.parse_kwarg(a) for a in args.arg),
        batch_size=args.batch_size, batched=args.batched, batch_format=args.batch_format,
        sample_hz=args.sample_hz, step_label=args.model or args.step,
    )


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag import api
    from pipediag.builder import target as targets
    from pipediag.commands.scale import scale_command
    from pipediag.diagnosis import write_json
    from pipediag.modes.runner import StopRule
    from pipediag.report.terminal import render_diagnosis

    if args.demo == bool(args.target):
        raise UsageError("give a TARGET or --demo (not both)", "pipediag diagnose path/to/data.py:make_dataset")
    if args.demo:
        from pipediag import demo

        builder, label = demo.make_dataset, "pipediag.demo:make_dataset (built-in example)"
    else:
        builder, label = targets.load_callable(args.target), args.target
    options = load_step_options(args)
    options.update(
        stop_rule=StopRule(max_seconds=args.max_seconds),
        ram_budget_bytes=args.ram_budget_mb * 2**20 if args.ram_budget_mb else None,
        label=label,
        scale_command=scale_command(args),
    )
    if args.quiet:
        diagnosis = api.diagnose(builder, **options)
    else:
        with RichProgress(err) as progress:
            diagnosis = api.diagnose(builder, progress=progress, **options)
    if args.json:
        write_json(diagnosis.to_dict(), args.json)
    out.print(render_diagnosis(diagnosis))
    if args.json:
        err.print(f"[dim]wrote {args.json}[/dim]")
    return EXIT_INTERRUPTED if diagnosis.status == "interrupted" else EXIT_OK
