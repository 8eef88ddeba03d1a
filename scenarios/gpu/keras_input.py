"""Keras 3 on JAX, input-bound: a compiled Keras MLP (`--model`, KERAS_BACKEND=jax) fed by a serial
`tf.py_function` map that sleeps 2 ms per element, like reading small files one by one (issue 14,
item 3: Keras on JAX fed by tf.data, the only way a Keras model trains on the H200 here).

Batches of 16 take ~32 ms to make on one thread; the jitted train step takes well under a
millisecond. Batches reach the model as Keras' own fit hands them over on JAX (its tf.data
adapter's `get_jax_iterator`: NumPy arrays).
Expected answer and why: input (the pipeline alone delivers far fewer batches than the step could
take), with a parallel_map fix on `map(slow_read)` measured by the tuned mode.
"""

import os
import sys
import time

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import STEP_FIXES, Expected  # noqa: E402

ENV = {"KERAS_BACKEND": "jax"}  # set before Keras is first imported: the benchmarks run it so
EXPECTED = Expected(bottleneck="input", stage="map(slow_read)", right_fixes=("parallel_map",), wrong_fixes=STEP_FIXES)

FEATURES = 256
HIDDEN = 1024
SLEEP_S = 0.002


def slow_read(x):
    def read(value):
        time.sleep(SLEEP_S)
        return value

    y = tf.py_function(read, [x], tf.float32)
    y.set_shape([FEATURES])
    return y


def make_dataset(batch_size=16, parallel=False):
    data = np.random.default_rng(0).normal(size=(4096, FEATURES)).astype("float32")
    labels = (np.arange(4096) % 10).astype("int32")
    calls = tf.data.AUTOTUNE if parallel else None
    x = tf.data.Dataset.from_tensor_slices(data).repeat().map(slow_read, num_parallel_calls=calls)
    y = tf.data.Dataset.from_tensor_slices(labels).repeat()
    return tf.data.Dataset.zip((x, y)).batch(batch_size)


def expert_dataset(batch_size=16):
    """The reads in parallel (they sleep: more calls in flight than cores), and a final prefetch."""
    return make_dataset(batch_size, parallel=True).prefetch(tf.data.AUTOTUNE)


def keras_on(backend):
    """Keras, checked to run on `backend`: KERAS_BACKEND must be set before its first import."""
    import keras

    if keras.backend.backend() != backend:
        raise RuntimeError(f"this scenario is Keras on {backend}, but Keras runs on {keras.backend.backend()}: "
                           f"run it with KERAS_BACKEND={backend}")
    return keras


def make_model():
    keras = keras_on("jax")
    model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(HIDDEN, activation="relu"),
                              keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
