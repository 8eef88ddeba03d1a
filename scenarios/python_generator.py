"""A Python generator doing per-element work.

Each example is a bag of 8,000 random token ids (a random crop of a document, say) turned into a
64-bin normalised histogram by a Python loop, inside a generator fed to `from_generator`. The
loop holds Python's GIL: whatever TensorFlow does around it, one core runs this Python.

Expected answer and why:
- bottleneck `input`: the generator yields ~1,000 examples/s; the step wants far more.
- stage `from_generator(examples)`: TensorFlow builds `from_generator` as a flat_map around the
  Python iterator (`flat_map(flat_map_fn)` in the graph); pipediag recognises it and names the
  user's generator. The work is in the generator.
- what does NOT help: `parallel_map` — there is no map to parallelize, and more threads calling
  into the generator would queue on the GIL; `interleave` over several generators — same GIL;
  `tf_data_service` — its workers cannot run a Python generator that lives in this process;
  `cache`/`snapshot` — every example is freshly random, caching would repeat the first epoch.
- what does help: moving the work out of Python into TensorFlow ops, done for a whole batch at once
  (`vectorize_map`: the expert version draws the tokens and counts them with `tf.math.bincount` per
  batch). `prefetch` overlaps the generator with the step: fine, but a small gain (the generator
  still runs on one core), so it does not count as the answer.
"""

import keras
import numpy as np
import tensorflow as tf
from _common import STEP_FIXES, Expected

EXPECTED = Expected(
    bottleneck="input",
    stage="from_generator(examples)",
    right_fixes=("vectorize_map",),
    wrong_fixes=("parallel_map", "interleave", "tf_data_service", "cache", "snapshot") + STEP_FIXES,
)

TOKENS, BINS = 8000, 64


def examples():
    rng = np.random.default_rng(3)
    while True:
        tokens = rng.integers(0, BINS, TOKENS).tolist()
        counts = [0] * BINS
        for t in tokens:  # per-element Python work: holds the GIL
            counts[t] += 1
        yield np.asarray(counts, np.float32) / TOKENS, int(np.argmax(counts)) % 10


def make_dataset(batch_size=64):
    ds = tf.data.Dataset.from_generator(
        examples, output_signature=(tf.TensorSpec([BINS], tf.float32), tf.TensorSpec([], tf.int64)),
    )
    return ds.batch(batch_size)


def histograms(seed, batch_size):
    """A whole batch of examples in TensorFlow ops: the same distribution as `examples()`."""
    tokens = tf.random.stateless_uniform([batch_size, TOKENS], seed=seed, minval=0, maxval=BINS, dtype=tf.int32)
    counts = tf.math.bincount(tokens, minlength=BINS, maxlength=BINS, axis=-1, dtype=tf.float32)
    return counts / TOKENS, tf.cast(tf.argmax(counts, axis=-1), tf.int64) % 10


def expert_dataset(batch_size=64):
    def batch_of_histograms(seed):
        return histograms(seed, batch_size)

    seeds = tf.data.Dataset.random(seed=3).batch(2)
    return seeds.map(batch_of_histograms, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def make_model():
    model = keras.Sequential([keras.Input((BINS,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
