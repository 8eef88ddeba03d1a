"""`pipediag baseline`: the machine's profile — a reference model on synthetic data at several batch sizes.

    pipediag baseline --json node.json --html node.html
    KERAS_BACKEND=jax pipediag baseline --budget 170 --json h200.json
    pipediag baseline --precision mixed_float16 --json h200-fp16.json
    pipediag compare --baseline old.json new.json
"""

from __future__ import annotations

import argparse

from rich.console import Console

from pipediag.commands.common import (
    add_output_arguments,
    check_outputs,
    exit_code_for,
    positive_float,
    positive_int,
    positive_int_list,
    print_and_write,
    with_progress,
)
from pipediag.errors import UsageError


def parse_sizes(text: str) -> tuple[int, ...]:
    return positive_int_list(text, f"{text!r} is not a list of integers (write e.g. 16,32,64)",
                             "give one or more positive batch sizes, e.g. 16,32,64")


def register(sub) -> None:
    from pipediag.api.baseline import CPU_DEFAULTS, GPU_DEFAULTS, MODELS
    from pipediag.steps.precision import FLOAT32, PRECISIONS

    b = sub.add_parser(
        "baseline", help="profile this machine: a reference model at several batch sizes (throughput, p50/p90, "
        "peak memory, GPU busy, the OOM edge)",
        description="Train a reference model on synthetic data at several batch sizes and keep the numbers as the "
        "machine's profile (--json, --html); compare two with 'pipediag compare --baseline A.json B.json'. "
        f"On a GPU: {GPU_DEFAULTS['model']}, batch sizes {','.join(map(str, GPU_DEFAULTS['batch_sizes']))}, budget "
        f"{GPU_DEFAULTS['budget_s']:g} s; without one: {CPU_DEFAULTS['model']}, "
        f"{','.join(map(str, CPU_DEFAULTS['batch_sizes']))}, {CPU_DEFAULTS['budget_s']:g} s. The Keras backend "
        "(KERAS_BACKEND=tensorflow, jax or torch) runs the model.",
    )
    b.add_argument("--model", choices=sorted(MODELS), help="the reference model (default: resnet50 on a GPU, "
                   "resnet20 without one); give the same one on every machine you compare")
    b.add_argument("--batch-sizes", type=parse_sizes, metavar="B1,B2,...", help="batch sizes, run small to large")
    b.add_argument("--budget", type=positive_float, metavar="SECONDS",
                   help="time for the whole profile; sizes that no longer fit are skipped, and said so")
    b.add_argument("--seconds-per-size", type=positive_float, metavar="SECONDS",
                   help="longest timed window at one batch size (default: 6)")
    b.add_argument("--find-oom-edge", action="store_true",
                   help="after the batch sizes given, keep doubling until one runs out of memory (within the budget)")
    b.add_argument("--gpu-memory-limit", type=positive_int, metavar="MB",
                   help="simulate a GPU with this much memory (as 'pipediag sweep' does): the OOM edge of a smaller card")
    b.add_argument("--precision", choices=PRECISIONS, default=FLOAT32,
                   help="the Keras dtype policy the model is built and trained under (default: float32); "
                   "mixed_float16 wraps the optimizer in loss scaling; on a CPU a mixed policy runs, with a note (it gains "
                   "little or loses there)")
    b.add_argument("--json", metavar="FILE", help="write the profile as JSON (schema_version 2, kind baseline); - for standard output")
    add_output_arguments(b, json=False, samples_csv=False)
    b.add_argument("--quiet", action="store_true", help="no progress display")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.api.baseline import run_baseline
    from pipediag.report.terminal.baseline import render_profile

    check_outputs(args)
    limit = None
    if args.gpu_memory_limit:  # before the Keras backend starts a framework on the GPU
        from pipediag.commands.sweep import _memory_limit

        limit = _memory_limit(args.gpu_memory_limit)
    options = dict(batch_sizes=args.batch_sizes, model=args.model, budget_s=args.budget,
                   window_s=args.seconds_per_size, find_oom_edge=args.find_oom_edge, memory_limit=limit,
                   precision=args.precision)
    profile = with_progress(args, err, lambda p: run_baseline(progress=p, **options))
    print_and_write(profile, render_profile(profile), args, out, err)
    return exit_code_for(profile.status)


def compare_profiles_command(args: argparse.Namespace, out: Console, err: Console) -> int:
    """`pipediag compare --baseline A.json B.json`, both files profiles from `pipediag baseline`."""
    from pipediag.commands.common import EXIT_OK, EXIT_SLOWER
    from pipediag.records.files import load_json
    from pipediag.report.terminal.baseline import render_profile_comparison
    from pipediag.results.baseline import BaselineProfile, compare_profiles, is_baseline

    if len(args.specs) != 1:
        raise UsageError("with a baseline profile, give exactly one other profile to compare with it",
                         "pipediag compare --baseline A.json B.json")
    data_b = load_json(args.specs[0])
    if not is_baseline(data_b):
        raise UsageError(f"{args.baseline} is a baseline profile, {args.specs[0]} is not (kind {data_b.get('kind')!r})",
                         "compare two files written by 'pipediag baseline --json FILE'")
    a = BaselineProfile.from_dict(load_json(args.baseline))
    b = BaselineProfile.from_dict(data_b)
    tolerance = args.equivalence
    comparison = compare_profiles(a, b, tolerance=tolerance)

    def label(path: str, p: BaselineProfile) -> str:
        gpu = p.environment.gpus[0].name if p.environment.gpus else "no GPU"
        return f"{path} ({p.model}, {p.precision}, {p.backend} on the {p.device}, {gpu}, {p.created_at})"

    out.print(render_profile_comparison(comparison, label(args.baseline, a), label(args.specs[0], b)))
    if args.fail_if_slower is not None and comparison.slower_than(args.fail_if_slower):
        return EXIT_SLOWER
    return EXIT_OK
