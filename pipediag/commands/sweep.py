"""`pipediag sweep`: the step at several batch sizes — throughput, peak memory, OOM edge, knee.

    pipediag sweep data.py:make_dataset --model data.py:make_model --batch-sizes 64,256,1024 --gpu-memory-limit 3072
    pipediag sweep data.py:make_dataset --model data.py:make_model --batch-sizes 64,256,1024 --gpu-memory-limit 3072 \
        --precision mixed_float16     # the model built under that Keras policy: where the OOM edge moves
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from rich.console import Console

from pipediag.commands.common import (
    add_output_arguments,
    check_outputs,
    comma_ints,
    exit_code_for,
    positive_int,
    print_and_write,
    with_progress,
)
from pipediag.commands.diagnose import add_target_arguments
from pipediag.errors import UsageError


def parse_batch_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = comma_ints(text)
    except ValueError:
        raise UsageError(f"--batch-sizes {text!r} is not a list of integers", "write e.g. --batch-sizes 16,32,64,128") from None
    if len(sizes) < 2 or any(b <= 0 for b in sizes) or len(set(sizes)) != len(sizes):
        raise UsageError(f"--batch-sizes {text!r}: give at least two different positive sizes",
                         "write e.g. --batch-sizes 16,32,64,128")
    return tuple(sorted(sizes))


def register(sub) -> None:
    from pipediag.steps.precision import PRECISIONS

    s = sub.add_parser("sweep", help="throughput and peak memory per batch size: the knee and the OOM edge")
    s.add_argument("target", help="dataset builder taking batch_size: file.py:function or package.module:function")
    s.add_argument("--batch-sizes", required=True, metavar="B1,B2,...", help="e.g. 16,32,64,128")
    add_target_arguments(s, batch_size=False, max_seconds=(3.0, "time cap per mode, at each batch size"))
    s.add_argument("--gpu-memory-limit", type=positive_int, metavar="MB",
                   help="simulate a GPU with this much memory (JAX memory fraction, TensorFlow logical device, "
                   "PyTorch per-process fraction)")
    s.add_argument("--precision", choices=PRECISIONS,
                   help="build the --model under this Keras dtype policy (restored after the build), e.g. "
                   "mixed_float16 to see it move the OOM edge (default: the builder's own, float32 unless it sets one)")
    s.add_argument("--keep-going", action="store_true", help="also run the sizes above the first that ran out of memory")
    s.add_argument("--json", metavar="FILE", help="write the sweep as JSON (schema_version 2, kind sweep); - for standard output")
    add_output_arguments(s, json=False, samples_csv=False)


def _memory_limit(megabytes: int, nvml_lib=None):
    """Before anything else: JAX reads its fraction when its backend starts, which loading the
    user's step may do; TensorFlow's logical devices must be set before it initialises its GPUs."""
    from pipediag.backends.memory_limit import before_user_code
    from pipediag.records.memory import MemoryLimit
    from pipediag.samples.gpu import GpuReader

    reader = GpuReader(nvml_lib).open()
    devices, reason = reader.devices, reader.unavailable_reason
    reader.close()
    if not devices or devices[0].memory_total_bytes is None:
        raise UsageError(f"--gpu-memory-limit needs an NVIDIA GPU whose memory NVML can read ({reason or 'unknown size'})",
                         "leave the option out on a machine without a GPU")
    total = devices[0].memory_total_bytes
    if megabytes * 2**20 >= total:
        raise UsageError(f"--gpu-memory-limit {megabytes} MB is not below this GPU's {total / 2**20:.0f} MB",
                         "give a smaller limit, or leave the option out")
    limit = MemoryLimit(megabytes * 2**20, total)
    before_user_code(limit)
    return limit


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pipediag.api.sweep import sweep
    from pipediag.builder import target as targets
    from pipediag.commands.common import options_from_args
    from pipediag.report.terminal.sweep import render_sweep

    sizes = parse_batch_sizes(args.batch_sizes)
    check_outputs(args)
    if args.precision is not None and not args.model:  # before anything slow starts
        from pipediag.steps.precision import refuse_for_step

        refuse_for_step(args.precision, "a --step function" if args.step else "the stand-in step (no --model given)")
    limit = _memory_limit(args.gpu_memory_limit) if args.gpu_memory_limit else None
    builder = targets.load_callable(args.target)
    options = replace(options_from_args(args, max_seconds=args.max_seconds, label=args.target), batch_size=None)
    if limit is not None:
        from pipediag.backends.memory_limit import after_user_code

        after_user_code(limit)
    asked = dict(memory_limit=limit, keep_going=args.keep_going, precision=args.precision)
    result = with_progress(args, err, lambda p: sweep(builder, sizes, options=replace(options, progress=p), **asked))
    print_and_write(result, render_sweep(result), args, out, err)
    return exit_code_for(result.status)
