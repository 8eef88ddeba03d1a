"""Input-bound: a serial tf.py_function map that sleeps 2 ms per element (like reading small
files one by one) feeding a small jitted JAX step.

Batches of 16 take ~32 ms to make on one thread; the step takes well under a millisecond.
Expected answer and why: input (the pipeline alone delivers far fewer batches than the step could take), with a
parallel_map fix on `map(slow_read)` measured by the tuned mode (16 cores overlap the sleeps).
"""

import os
import sys
import time

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import STEP_FIXES, Expected  # noqa: E402

BATCH_FORMAT = "numpy"  # the JAX step takes NumPy batches (--batch-format numpy)
EXPECTED = Expected(bottleneck="input", stage="map(slow_read)", right_fixes=("parallel_map",), wrong_fixes=STEP_FIXES)

FEATURES = 256
SLEEP_S = 0.002


def slow_read(x):
    def read(value):
        time.sleep(SLEEP_S)
        return value

    y = tf.py_function(read, [x], tf.float32)
    y.set_shape([FEATURES])
    return y


def make_dataset(batch_size=16, parallel=False):
    """parallel=True: the hand fix, for `pipediag compare ... --arg-b parallel=True`."""
    data = np.random.default_rng(0).normal(size=(4096, FEATURES)).astype("float32")
    labels = (np.arange(4096) % 10).astype("int32")
    calls = tf.data.AUTOTUNE if parallel else None
    x = tf.data.Dataset.from_tensor_slices(data).repeat().map(slow_read, num_parallel_calls=calls)
    y = tf.data.Dataset.from_tensor_slices(labels).repeat()
    return tf.data.Dataset.zip((x, y)).batch(batch_size)


def expert_dataset(batch_size=16):
    """The reads in parallel (they sleep: more calls in flight than cores), and a final prefetch."""
    return make_dataset(batch_size, parallel=True).prefetch(tf.data.AUTOTUNE)


def make_step():
    import jax
    import jax.numpy as jnp

    w = jax.random.normal(jax.random.key(0), (FEATURES, 1024), jnp.float32) / FEATURES**0.5

    @jax.jit
    def forward(x, w):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    def step(batch):
        return forward(jnp.asarray(batch[0]), w)

    return step
