"""How long `pipediag compare` takes to reach a verdict, and whether its ratio is right.

For each case: run `compare()` REPEATS times and report the median time to a verdict (the
whole call: building both datasets, warm-up, rounds), the rounds it took, and its ratio with
the 95% interval. Then, as a reference for accuracy, run each pipeline alone for long stretches
(A, B, A, B; LONG_SECONDS each, after warm-up) and report the ratio of those long-run rates:
switching sides every half second must not change the answer (prefetch buffers that fill while
the other side runs are drained before timing, see docs/compare.md).

    flock /tmp/pipediag-cpu.lock python benchmarks/compare_time.py [--repeats 3] [--out FILE]

Writes a markdown results file under benchmarks/results/ with the date and the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import psutil  # noqa: E402

import pipediag  # noqa: E402
from pipediag import demo  # noqa: E402
from pipediag.backends.tf import tf  # noqa: E402
from pipediag.modes.feeds import BatchFeed  # noqa: E402
from pipediag.modes.runner import run_mode  # noqa: E402
from pipediag.records.run import StopRule  # noqa: E402
from pipediag.steps.standin import standin_step  # noqa: E402

LONG_SECONDS = 8.0


def demo_parallel(batch_size: int = 32):
    """The demo pipeline with its decode run in parallel, ending in prefetch."""
    jpegs = demo._jpegs(demo.DISTINCT_IMAGES, demo.JPEG_SIZE)
    labels = np.arange(demo.DISTINCT_IMAGES, dtype=np.int64) % 10
    ds = tf.data.Dataset.from_tensor_slices((jpegs, labels)).repeat()
    ds = ds.map(demo.decode_and_augment, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def _read(x):
    def read(value):
        time.sleep(0.003)
        return value

    y = tf.py_function(read, [x], tf.float32)
    y.set_shape([8])
    return y


def sleepy_reads(prefetch: bool = False, batch_size: int = 16):
    """Reads that wait 3 ms each (48 ms a batch), serial; with prefetch they overlap the step."""
    data = np.random.default_rng(0).normal(size=(4096, 8)).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices(data).repeat().map(_read).batch(batch_size)
    return ds.prefetch(tf.data.AUTOTUNE) if prefetch else ds


def sleepy_step(batch):
    """A step that takes 20 ms without using the CPU (like waiting for a GPU)."""
    time.sleep(0.020)
    return batch


CASES = {
    # name: (A, B, step or None for the stand-in, what to expect)
    "parallel_map": (demo.make_dataset, demo_parallel, None,
                     "the demo (JPEG decode + augment, stand-in CNN) with its map made parallel: faster"),
    "prefetch": (sleepy_reads, lambda: sleepy_reads(prefetch=True), sleepy_step,
                 "48 ms of sleeping reads + a 20 ms step; B adds prefetch(AUTOTUNE). tf.data's default "
                 "`inject_prefetch` optimization already ends A with a prefetch (A's fed wait plus step time equals "
                 "its batch time), so the truth is about 1.0: a change that does not help, with a prefetch buffer "
                 "that would fill during A's turns if B's iterator were left running"),
    "self": (demo.make_dataset, demo.make_dataset, None, "the demo against itself: no difference"),
}


def long_run_ratio(a, b, step) -> tuple[float, list[float], list[float]]:
    """B/A from long runs of each pipeline alone, alternated A B A B, each after warm-up."""
    first = next(iter(a()))
    run_step = step or standin_step(first).run
    rates = {"A": [], "B": []}
    for name in ("A", "B", "A", "B"):
        feed = BatchFeed((a if name == "A" else b)())
        rule = StopRule(max_seconds=LONG_SECONDS, min_seconds=LONG_SECONDS, min_steps=1, warmup_steps=10)
        run = run_mode(name, feed, run_step, rule, clock_ns=time.monotonic_ns)
        rates[name].append(run.steps / (sum(run.step_ns) / 1e9))
        feed.close()
    return statistics.mean(rates["B"]) / statistics.mean(rates["A"]), rates["A"], rates["B"]


def machine() -> str:
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{psutil.cpu_count()} logical cores ({model}), {psutil.virtual_memory().total / 2**30:.0f} GiB, "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}, TensorFlow {tf.__version__}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results",
                                                      f"compare_time-{dt.date.today().isoformat()}.md"))
    args = parser.parse_args()

    lines = [f"# compare: time to a verdict — {dt.datetime.now().isoformat(timespec='minutes')}", "",
             f"Machine: {machine()}.", "",
             f"Command: `flock /tmp/pipediag-cpu.lock python benchmarks/compare_time.py --repeats {args.repeats}` "
             "(default settings: 60 s cap, 30 rounds, turns of 0.5 s, equivalence ±5%). Time to a verdict is the "
             "whole `compare()` call (building both datasets, warm-up, rounds); TensorFlow was imported before.", ""]
    for name in args.cases:
        a, b, step, expect = CASES[name]
        runs = []
        for _ in range(args.repeats):
            c = pipediag.compare(a, b, step=step, label_a=f"{name}:A", label_b=f"{name}:B")
            iv = c.interval
            runs.append((c.elapsed_s, len(c.rounds), c.verdict.verdict, iv, c.stop_reason))
            print(name, f"{c.elapsed_s:.1f}s", len(c.rounds), c.verdict.verdict,
                  iv and f"{iv.ratio:.3f} [{iv.low:.3f}, {iv.high:.3f}]", c.stop_reason, flush=True)
        truth, rate_a, rate_b = long_run_ratio(a, b, step)
        print(name, "long-run ratio", f"{truth:.3f}", rate_a, rate_b, flush=True)
        lines += [f"## {name}", "", expect, "",
                  "| run | time to verdict (s) | rounds | verdict | B/A [95% CI] | stopped |",
                  "|---|---|---|---|---|---|"]
        for i, (elapsed, n, verdict, iv, stop) in enumerate(runs, 1):
            ci = "—" if iv is None else f"{iv.ratio:.3f} [{iv.low:.3f}, {iv.high:.3f}]"
            lines.append(f"| {i} | {elapsed:.1f} | {n} | {verdict} | {ci} | {stop} |")
        covered = sum(iv is not None and iv.low <= truth <= iv.high for _, _, _, iv, _ in runs)
        lines += ["", f"Median time to a verdict: **{statistics.median(r[0] for r in runs):.1f} s** "
                      f"(median {statistics.median(r[1] for r in runs):g} rounds).",
                  f"Long-run reference (each pipeline alone, {LONG_SECONDS:g} s × 2, alternated): B/A = {truth:.3f} "
                  f"(A {', '.join(f'{r:.1f}' for r in rate_a)}; B {', '.join(f'{r:.1f}' for r in rate_b)} batches/s); "
                  f"inside the interval in {covered} of {len(runs)} runs.", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
