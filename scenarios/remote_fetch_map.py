"""A map that fetches each record from a slow remote service (latency-bound, per element).

An endless stream of keys is mapped through `map(fetch_record)`, a `tf.py_function` calling a
key-value store client that blocks ~2 ms per request (a network round trip; here a sleep, as the
client would block). TensorFlow keeps `py_function` maps serial, so requests go one at a time.

Expected answer and why:
- bottleneck `input`: ~2 ms per record x 32 records per batch, far slower than the tiny MLP.
- stage `map(fetch_record)`.
- CPU: idle while waiting — requests wait, they do not compute.
- right: `parallel_map` (requests in parallel), `threading` (more requests in flight than the
  two cores: each mostly waits).
- wrong: `cache`/`snapshot` (an endless stream of fresh records: nothing repeats),
  `tf_data_service` (the CPUs are idle: more machines would wait the same), step-side fixes.
"""

import time

import keras
import numpy as np
import tensorflow as tf
from _common import STEP_FIXES, Expected

EXPECTED = Expected(
    bottleneck="input",
    stage="map(fetch_record)",
    right_fixes=("parallel_map", "threading"),
    wrong_fixes=("cache", "snapshot", "tf_data_service") + STEP_FIXES,
)

FEATURES = 64
LATENCY_S = 0.002


def _get(key):
    time.sleep(LATENCY_S)  # the round trip of one GET
    rng = np.random.default_rng(int(key))
    return rng.normal(size=FEATURES).astype(np.float32)


def fetch_record(key):
    x = tf.py_function(_get, [key], tf.float32)
    x.set_shape([FEATURES])
    return x, key % 10


def make_dataset(batch_size=32):
    return tf.data.Dataset.counter().map(fetch_record).batch(batch_size)


def expert_dataset(batch_size=32):
    ds = tf.data.Dataset.counter().map(fetch_record, num_parallel_calls=32, deterministic=False)
    ds = ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.threading.private_threadpool_size = 48  # 32 blocking requests in flight on 2 cores
    return ds.with_options(options)


def make_model():
    model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
