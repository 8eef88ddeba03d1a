"""Does caching (or prefetching to the GPU, or uint8 pixels) help tf_keras_input here? Plain TensorFlow, no pipediag.

Run 20 on the H200 (docs/gpu-validation.md): pipediag measured its cache move
(`repeat().map(decode)` -> `map(decode).cache().repeat()`) alone at 0.83x the original in training,
and left it out; on the 2-core machine the same move measured 1.16x, and a plain input-alone loop
there reads the moved pipeline at ~2,000 batches/s against the original's ~100. This script gives
the expected answer from plain TensorFlow: each variant of the pipeline feeding the scenario's
Keras CNN (`train_on_batch`, as pipediag's --model step), and iterated alone, in interleaved
rounds of a few seconds, with the process's CPU use. From the project root:

    KERAS_BACKEND=tensorflow python benchmarks/tf_gpu/cache_move.py [--seconds 2] [--rounds 3]

Prints one table and writes $OUT/cache_move.json (OUT defaults to the current folder).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import psutil

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios", "gpu"))
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras_input as scenario  # noqa: E402


def decode_uint8(data, label):
    """The scenario's decode and resize, kept as uint8 pixels (a quarter of float32's bytes)."""
    image = tf.io.decode_jpeg(data, channels=3)
    image = tf.image.resize(image, (scenario.SIDE, scenario.SIDE))
    return tf.cast(tf.clip_by_value(tf.round(image), 0, 255), tf.uint8), label


def variants(batch_size: int) -> dict:
    jpegs = scenario._jpegs()
    labels = (np.arange(len(jpegs)) % 10).astype("int32")

    def src():
        return tf.data.Dataset.from_tensor_slices((jpegs, labels))

    return {
        "original: repeat().map(decode).batch": lambda: scenario.make_dataset(batch_size),
        "moved cache: map(decode).cache().repeat().batch": lambda: src().map(scenario.decode).cache().repeat()
        .batch(batch_size),
        "moved cache + prefetch": lambda: src().map(scenario.decode).cache().repeat().batch(batch_size)
        .prefetch(tf.data.AUTOTUNE),
        "expert_dataset (parallel map, cache, prefetch)": lambda: scenario.expert_dataset(batch_size),
        "synthetic: one batch repeated": lambda: tf.data.Dataset.from_tensors(
            next(iter(scenario.make_dataset(batch_size)))).repeat(),
        # What an expert tries next when 12-MiB float32 batches cross to the GPU (run 21): copy them
        # ahead of the step, or send a quarter of the bytes (uint8 pixels; the model casts them on
        # the device: the values are 0-255, not 0-1, which changes training, not the timing).
        "original + prefetch_to_device('/gpu:0')": lambda: scenario.make_dataset(batch_size).apply(
            tf.data.experimental.prefetch_to_device("/gpu:0")),
        "uint8 pixels: repeat().map(decode_uint8).batch": lambda: src().repeat().map(decode_uint8).batch(batch_size),
        "uint8 pixels, moved cache": lambda: src().map(decode_uint8).cache().repeat().batch(batch_size),
    }


def rate(fn, seconds: float) -> tuple[float, float]:
    """Calls of fn per second over `seconds`, and the process's CPU use in cores meanwhile."""
    proc = psutil.Process()
    cpu0, t0, n = proc.cpu_times(), time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    wall = time.perf_counter() - t0
    cpu1 = proc.cpu_times()
    return n / wall, (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / wall


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args()
    model = scenario.make_model()
    made = variants(args.batch_size)
    if not tf.config.list_physical_devices("GPU"):
        made.pop("original + prefetch_to_device('/gpu:0')")  # no GPU to prefetch to
    fed: dict[str, list] = {k: [] for k in made}
    alone: dict[str, list] = {k: [] for k in made}
    failed: dict[str, str] = {}
    for r in range(args.rounds):
        for name, make in made.items():
            if name in failed:
                continue
            try:
                it = iter(make())
                for _ in range(10):  # warm-up: the first pass fills a cache, the step traces once
                    x, y = next(it)
                    model.train_on_batch(x, y)

                def step(it=it):
                    x, y = next(it)
                    model.train_on_batch(x, y)

                fed[name].append(rate(step, args.seconds))
                alone_it = iter(make())
                for _ in range(10):
                    next(alone_it)
                alone[name].append(rate(lambda it=alone_it: next(it), args.seconds))
            except Exception as error:  # noqa: BLE001  one variant that cannot run here is said, the others go on
                failed[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
                print(f"{name}: failed: {failed[name]}", flush=True)
                continue
            print(f"round {r + 1} {name}: fed {fed[name][-1][0]:.1f}/s, alone {alone[name][-1][0]:.1f}/s", flush=True)
    gpus = [d.name for d in tf.config.list_physical_devices("GPU")]
    print(f"\nTensorFlow {tf.__version__}, GPUs {gpus}, {os.cpu_count()} CPUs, batch {args.batch_size}, "
          f"{args.rounds} rounds of {args.seconds} s (median; min-max)")
    print(f"{'variant':52s} {'fed batches/s':>22s} {'cores':>6s} {'alone batches/s':>22s} {'cores':>6s}")
    rows = {}
    for name in made:
        if name in failed:
            rows[name] = {"failed": failed[name]}
            print(f"{name:52s} failed: {failed[name]}")
            continue
        f = [x[0] for x in fed[name]]
        a = [x[0] for x in alone[name]]
        row = {"fed": f, "fed_cores": [x[1] for x in fed[name]], "alone": a, "alone_cores": [x[1] for x in alone[name]]}
        rows[name] = row
        print(f"{name:52s} {statistics.median(f):8.1f} ({min(f):.0f}-{max(f):.0f}) "
              f"{statistics.median(row['fed_cores']):6.1f} {statistics.median(a):8.1f} ({min(a):.0f}-{max(a):.0f}) "
              f"{statistics.median(row['alone_cores']):6.1f}")
    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, "cache_move.json"), "w") as fh:
        json.dump({"tensorflow": tf.__version__, "gpus": gpus, "cpus": os.cpu_count(), "batch_size": args.batch_size,
                   "seconds": args.seconds, "rounds": args.rounds, "variants": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
