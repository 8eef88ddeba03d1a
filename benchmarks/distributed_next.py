"""Plain TensorFlow, no pipediag: where the wait of tf_distribute_custom_training's loop goes
(issue 24, item 7: `pipediag run` read "input (low)", `diagnose` on the builder read compute).

    flock /tmp/cpu.lock python benchmarks/distributed_next.py [--batches N] [--rounds R]

In the script's own setting (scenarios/scripts/tf_distribute_custom_training: its data from the
case's make_data.py, `from_tensor_slices(...).shuffle(60000).batch(64)`, a MirroredStrategy with
the replicas this machine has, the tutorial's `distributed_train_step` taken from the builder,
whose code is the script's), it times:

- next() per batch, no step: (a) the distributed iterator over the script's dataset (and with
  `.prefetch(AUTOTUNE)` added: a pipeline change), (b) a
  distributed iterator over one batch repeated (`from_tensors(batch).repeat()`, and with
  `prefetch(1)` as pipediag's hand-over timing builds it), (c) the plain iterator over the
  script's dataset, (b-plain) the plain iterator over one batch repeated;
- the script's step in its own loop shape (`for x in iterator: total += step(x)`), the wait for
  each batch and the rest of the step timed apart, fed by (a), by (b), and by an already
  distributed constant batch (the free step), and by (a) with the prefetch.

A batch count below 938 keeps every timed next() inside one epoch (no iterator start). Each
round runs every case once, in order; the medians over rounds are printed, then every reading.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import tensorflow as tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASE_DIR = os.path.join(ROOT, "scenarios", "scripts", "tf_distribute_custom_training")
sys.path.insert(0, CASE_DIR)
sys.path.insert(0, os.path.dirname(CASE_DIR))

import builder  # noqa: E402  (the script's step, under the builder's MirroredStrategy)
from _data import case_root, load_maker  # noqa: E402


def script_dataset(strategy) -> tf.data.Dataset:
    """The script's training dataset, built as the script builds it."""
    train_images, train_labels = load_maker(builder.CASE).arrays(case_root(builder.CASE))
    train_images = train_images[..., None] / np.float32(255)
    global_batch = builder.BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync
    return tf.data.Dataset.from_tensor_slices((train_images, train_labels)).shuffle(len(train_images)).batch(global_batch)


def next_ms(iterator, n: int) -> float:
    """Mean ms per next() over n calls, after one untimed call."""
    next(iterator)
    t0 = time.perf_counter_ns()
    for _ in range(n):
        next(iterator)
    return (time.perf_counter_ns() - t0) / n / 1e6


def loop_ms(iterator, step, n: int, warmup: int = 5) -> tuple[float, float]:
    """The script's loop shape over `iterator`: (mean wait ms, mean rest-of-step ms) per step."""
    total = 0.0
    for _ in range(warmup):
        total += step(next(iterator))
    wait = rest = 0
    for _ in range(n):  # a step is from one request for a batch to the next, as pipediag run times it
        t0 = time.perf_counter_ns()
        x = next(iterator)
        t1 = time.perf_counter_ns()
        total += step(x)
        wait += t1 - t0
        rest += time.perf_counter_ns() - t1
    float(total)
    return wait / n / 1e6, rest / n / 1e6


def constant_iterator(batch):
    while True:
        yield batch


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    strategy = builder._get_strategy()
    dataset = script_dataset(strategy)
    batch = next(iter(dataset))
    distribute = strategy.experimental_distribute_dataset
    repeated = tf.data.Dataset.from_tensors(batch).repeat()
    prefetched = dataset.prefetch(tf.data.AUTOTUNE)  # a pipeline change: does it remove the wait?
    step = builder.make_step()
    held = next(iter(distribute(tf.data.Dataset.from_tensors(batch))))  # distributed once, held

    n = args.batches
    next_cases = {
        "(a) distributed, script's dataset": lambda: next_ms(iter(distribute(dataset)), n),
        "(a) distributed, script's dataset + prefetch(AUTOTUNE)": lambda: next_ms(iter(distribute(prefetched)), n),
        "(b) distributed, one batch repeated": lambda: next_ms(iter(distribute(repeated)), n),
        "(b) distributed, one batch repeated, prefetch(1)": lambda: next_ms(iter(distribute(repeated.prefetch(1))), n),
        "(c) plain, script's dataset": lambda: next_ms(iter(dataset), n),
        "(c) plain, one batch repeated": lambda: next_ms(iter(repeated), n),
    }
    loop_cases = {
        "step fed by (a), the script's loop": lambda: loop_ms(iter(distribute(dataset)), step, n),
        "step fed by (a) + prefetch(AUTOTUNE)": lambda: loop_ms(iter(distribute(prefetched)), step, n),
        "step fed by (b), distributed one batch repeated": lambda: loop_ms(iter(distribute(repeated)), step, n),
        "step fed by a distributed constant batch (free)": lambda: loop_ms(constant_iterator(held), step, n),
    }
    loop_ms(constant_iterator(held), step, 20)  # trace and warm the step
    readings: dict[str, list] = {name: [] for name in (*next_cases, *loop_cases)}
    for _ in range(args.rounds):
        for name, case in (*next_cases.items(), *loop_cases.items()):
            readings[name].append(case())

    print(f"TensorFlow {tf.__version__}, {strategy.num_replicas_in_sync} replica(s) "
          f"({', '.join(strategy.extended.worker_devices)}), global batch {batch[0].shape[0]}, "
          f"{n} timed batches a reading, {args.rounds} round(s), {os.cpu_count()} CPUs")
    print("\nnext() per batch, no step (median over rounds, ms):")
    for name in next_cases:
        print(f"  {name:56s} {statistics.median(readings[name]):6.3f}")
    print("\nthe script's step in its loop (median over rounds): wait ms, rest ms, steps/s")
    for name in loop_cases:
        wait = statistics.median(r[0] for r in readings[name])
        rest = statistics.median(r[1] for r in readings[name])
        print(f"  {name:56s} wait {wait:6.3f}  rest {rest:6.3f}  {1e3 / (wait + rest):6.1f}/s  "
              f"wait share {wait / (wait + rest):.1%}")
    print("\nevery reading:")
    for name, values in readings.items():
        shown = [f"{v:.3f}" if isinstance(v, float) else f"{v[0]:.3f}+{v[1]:.3f}" for v in values]
        print(f"  {name}: {', '.join(shown)}")


if __name__ == "__main__":
    main()
