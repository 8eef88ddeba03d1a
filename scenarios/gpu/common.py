"""Shared by the GPU scenarios: an in-memory tf.data pipeline of float32 vectors and int labels.

Importing this does not import JAX; each scenario's make_step() does, when pipediag builds the
step (after `--gpu-memory-limit` has set JAX's memory fraction, for the sweep).
"""

import os
import sys

import numpy as np
import tensorflow as tf

# scenarios/ itself, for the expected-answer type the accuracy benchmark reads.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import INPUT_FIXES, STEP_FIXES, Expected  # noqa: E402, F401  (re-exported for the scenarios)


def vectors(batch_size: int, features: int, examples: int = 8192, seed: int = 0):
    """Endless batches of (x float32[features], y int32) from memory, prefetched: free input."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(examples, features)).astype("float32")
    y = (np.arange(examples) % 10).astype("int32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch_size, drop_remainder=True)
    return ds.prefetch(tf.data.AUTOTUNE)
