"""What the background sampler costs the step: throughput with it vs without it, interleaved.

The goal: the sampler (psutil + NVML + GPM at 10 Hz, exactly as `diagnose` runs it) costs at most
1% of step throughput. The step runs on one constant batch (free input, as in synthetic mode), in
blocks of `--block-s` seconds, alternating sampler on / off within each round and swapping the
order every round (on-off, off-on, ...), so drift (clocks, thermals, other load) hits both
sides alike. Each round gives a ratio rate_on / rate_off; the estimate is their geometric mean,
with a Student-t 95% interval on the log ratios. Overhead = 1 - ratio.

Verdict: "within 1%" when the interval's upper end of the overhead is <= 1%; "over 1%" when its
lower end is > 1%; otherwise "undecided" (too noisy to tell at this length: run more rounds).

    python benchmarks/sampler_overhead.py --dataset scenarios/gpu/host.py:make_dataset \\
        --step scenarios/gpu/host.py:make_step --batch-format numpy --json overhead.json

It also times one sample (`Sampler.sample_once`) on its own: the sampler thread's cost per tick,
in wall time and in that thread's CPU time.

`--python-step`: instead of a real step, a pure-Python one (a fixed loop; no dataset): the worst
case for a sampler thread, since every moment it holds the GIL is taken from the step, and steady
enough (no device, no allocator) that a fraction of a percent shows:

    python benchmarks/sampler_overhead.py --python-step --rounds 20 --block-s 1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipediag import stats  # noqa: E402
from pipediag.builder import target as targets  # noqa: E402
from pipediag.samples.gpu import GpuReader  # noqa: E402
from pipediag.samples.sampler import DEFAULT_HZ, Sampler  # noqa: E402
from pipediag.steps.user_step import user_step  # noqa: E402

LIMIT_PCT = 1.0


def python_step(batch) -> int:
    """About a millisecond of pure-Python work, holding the GIL throughout."""
    total = 0
    for i in range(20_000):
        total += i * i
    return total


def run_block(step, batch, seconds: float) -> tuple[int, float]:
    steps = 0
    start = time.perf_counter()
    end = start + seconds
    while True:
        step(batch)
        steps += 1
        now = time.perf_counter()
        if now >= end:
            return steps, now - start


def measure(step, batch, *, rounds: int, block_s: float, hz: float, warmup_s: float) -> dict:
    run_block(step, batch, warmup_s)
    blocks = []
    ratios = []
    samples_taken = []
    for r in range(rounds):
        order = ("on", "off") if r % 2 == 0 else ("off", "on")
        rate = {}
        for side in order:
            sampler = Sampler(gpu_reader=GpuReader(), hz=hz) if side == "on" else None
            if sampler is not None:
                sampler.start()  # NVML start-up happens here, outside the timed block, as in diagnose
            steps, elapsed = run_block(step, batch, block_s)
            if sampler is not None:
                log = sampler.stop()
                samples_taken.append(len(log.samples))
                if sampler.error is not None:
                    raise RuntimeError(f"the sampler failed: {sampler.error!r}")
            rate[side] = steps / elapsed
            blocks.append({"round": r, "sampler": side, "steps": steps, "seconds": elapsed, "steps_per_sec": rate[side]})
        ratios.append(rate["on"] / rate["off"])
    logs = [math.log(x) for x in ratios]
    mean = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1)) if len(logs) > 1 else float("nan")
    t = stats.t_95(len(logs) - 1) if len(logs) > 1 else float("nan")
    half = t * sd / math.sqrt(len(logs))
    ratio, low, high = math.exp(mean), math.exp(mean - half), math.exp(mean + half)
    overhead = 100 * (1 - ratio)
    overhead_low, overhead_high = 100 * (1 - high), 100 * (1 - low)
    if overhead_high <= LIMIT_PCT:
        verdict = f"within {LIMIT_PCT:g}%"
    elif overhead_low > LIMIT_PCT:
        verdict = f"over {LIMIT_PCT:g}%"
    else:
        verdict = "undecided"
    return {
        "rounds": rounds, "block_s": block_s, "hz": hz,
        "ratio_on_over_off": ratio, "ratio_ci95": [low, high],
        "overhead_pct": overhead, "overhead_pct_ci95": [overhead_low, overhead_high],
        "verdict": verdict, "round_ratios": ratios, "blocks": blocks,
        "samples_per_block": samples_taken,
    }


def time_one_sample(hz: float, n: int = 30) -> dict:
    reader = GpuReader()
    sampler = Sampler(gpu_reader=reader, hz=hz)
    reader.open()
    sampler.cpu_reader.prime()
    durations, cpu = [], []
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.thread_time()
        sampler.sample_once()
        durations.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
        time.sleep(0.11)  # GPM wants > 100 ms between its samples
    metrics = sorted(reader.metrics)
    sampler.stop()
    return {"sample_ms_median": 1000 * stats.median(durations), "sample_ms_p90": 1000 * stats.percentile(durations, 90),
            "sample_cpu_ms_median": 1000 * stats.median(cpu),
            "gpu": reader.unavailable_reason or "NVML", "gpu_metrics": metrics}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", help="builder spec; one batch of it is the constant input")
    p.add_argument("--step", help="step factory spec (returns step(batch))")
    p.add_argument("--python-step", action="store_true", help="a pure-Python step instead (GIL-bound, no dataset)")
    p.add_argument("--batch-format", choices=["tf", "numpy", "dlpack"], default="numpy")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--block-s", type=float, default=2.0)
    p.add_argument("--warmup-s", type=float, default=2.0)
    p.add_argument("--hz", type=float, default=DEFAULT_HZ)
    p.add_argument("--json", help="write the result here")
    args = p.parse_args(argv)
    if args.python_step == bool(args.dataset and args.step):
        p.error("give --dataset and --step, or --python-step")
    if args.python_step:
        step, batch = python_step, None
        args.dataset = args.step = "python"
    else:
        from pipediag.modes.feeds import BatchFeed

        builder = targets.load_callable(args.dataset)
        kwargs = {"batch_size": args.batch_size} if args.batch_size and targets.accepts(builder, "batch_size") else {}
        dataset = builder(**kwargs)
        batch = BatchFeed(dataset, args.batch_format)()
        step = user_step(targets.load_callable(args.step)(), args.step, args.batch_format).run
    result = measure(step, batch, rounds=args.rounds, block_s=args.block_s, hz=args.hz, warmup_s=args.warmup_s)
    result.update(dataset=args.dataset, step=args.step, batch_format=args.batch_format, one_sample=time_one_sample(args.hz))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    o = result
    print(f"sampler at {args.hz:g} Hz: throughput ratio on/off {o['ratio_on_over_off']:.4f} "
          f"(95% {o['ratio_ci95'][0]:.4f}-{o['ratio_ci95'][1]:.4f}); overhead {o['overhead_pct']:+.2f}% "
          f"(95% {o['overhead_pct_ci95'][0]:+.2f}% to {o['overhead_pct_ci95'][1]:+.2f}%): {o['verdict']}; "
          f"one sample {o['one_sample']['sample_ms_median']:.2f} ms, {o['one_sample']['sample_cpu_ms_median']:.2f} ms "
          f"of CPU ({o['one_sample']['gpu']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
