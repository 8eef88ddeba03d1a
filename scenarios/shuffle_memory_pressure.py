"""A shuffle buffer that puts the host under memory pressure.

Examples of 96 KiB (a 24,576-float feature map) go through `shuffle(10922)`: the buffer holds
~1.0 GiB before the first batch comes out. The benchmark runs this with `--ram-budget-mb 512`:
the job may use 512 MiB of host memory, as in a container with a memory limit.

Why a budget instead of real pressure: real pressure on this shared 24 GiB machine would mean
filling ~22 GiB until the kernel reclaims or kills — unsafe beside other processes, and there is
no swap to make it show as slowness. A budget is what a container limit is (psutil sees the
host's memory, not the container's): the buffer is real and really allocated (~1 GiB, safe
here), and it is twice what the job may use. A user would pass their limit the same way.

Expected answer and why:
- bottleneck `memory`: the shuffle buffer alone is about twice the budget; under a real 512 MiB
  limit the job would be killed while the buffer fills.
- stage `shuffle(10922)`: the buffer is the memory (buffer_size x bytes per element).
- right: `shuffle_buffer` — a smaller buffer (with file-level shuffling and `interleave` for
  randomness).
- wrong: `cache` (more memory), `prefetch`/`parallel_map` (more buffers, and speed is not the
  problem), step-side fixes that do not touch host memory (`xla`, `mixed_precision`).
"""

import keras
import tensorflow as tf
from _common import Expected

EXPECTED = Expected(
    bottleneck="memory",
    stage="shuffle(10922)",
    right_fixes=("shuffle_buffer",),
    wrong_fixes=("cache", "prefetch", "parallel_map", "xla", "mixed_precision"),
)
DIAGNOSE_ARGS = ("--ram-budget-mb", "512")

FEATURES = 24_576  # 96 KiB of float32 per example
BUFFER = 10_922  # x 96 KiB = 1.0 GiB


def load(index):
    x = tf.random.stateless_uniform([FEATURES], seed=tf.stack([index, 11]))
    return x, index % 10


def make_dataset(batch_size=32):
    ds = tf.data.Dataset.range(1_000_000).map(load)
    return ds.shuffle(BUFFER).batch(batch_size)


def expert_dataset(batch_size=32):
    # Randomness from shuffling the order of index blocks (as one would shuffle file names) plus
    # a buffer of 512 examples (48 MiB) instead of ~1 GiB.
    blocks = tf.data.Dataset.range(1_000_000 // 256).shuffle(1_000_000 // 256)
    ds = blocks.interleave(lambda b: tf.data.Dataset.range(b * 256, (b + 1) * 256), cycle_length=8,
                           num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.map(load, num_parallel_calls=tf.data.AUTOTUNE).shuffle(512)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def make_model():
    model = keras.Sequential([
        keras.Input((FEATURES,)),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
