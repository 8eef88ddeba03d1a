"""Per-batch cost of next() on the TF distributed tutorial's pipeline, plain vs distributed, with
and without repeat, no step (benchmarks/results/run-step-waits-cpu-2026-12-02.md). Run it under
/tmp/cpu.lock."""

import time

import numpy as np
import tensorflow as tf

x = np.random.default_rng(0).random((60000, 28, 28, 1), dtype=np.float32)
y = np.zeros(60000, np.uint8)
strategy = tf.distribute.MirroredStrategy()


def make(rep, pf=False, buf=60000):
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(buf).batch(64)
    ds = ds.repeat() if rep else ds
    return ds.prefetch(tf.data.AUTOTUNE) if pf else ds


def per_batch_ms(it, n=600):
    next(it)
    t0 = time.perf_counter()
    for _ in range(n):
        next(it)
    return (time.perf_counter() - t0) / n * 1e3


def first_ms(mk):
    t0 = time.perf_counter()
    next(mk())
    return (time.perf_counter() - t0) * 1e3


CASES = [
    ("plain", lambda: iter(make(False))),
    ("plain repeat", lambda: iter(make(True))),
    ("distributed", lambda: iter(strategy.experimental_distribute_dataset(make(False)))),
    ("distributed repeat", lambda: iter(strategy.experimental_distribute_dataset(make(True)))),
    ("distributed +prefetch", lambda: iter(strategy.experimental_distribute_dataset(make(False, True)))),
    ("distributed shuffle(1024)", lambda: iter(strategy.experimental_distribute_dataset(make(False, False, 1024)))),
]
for name, mk in CASES:
    print(f"{name:28s} per batch {min(per_batch_ms(mk()) for _ in range(2)):.2f} ms   "
          f"iterator start + first batch {min(first_ms(mk) for _ in range(3)):.0f} ms", flush=True)
