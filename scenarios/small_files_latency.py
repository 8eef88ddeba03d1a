"""Many small files behind a slow, latency-bound read (interleave territory).

The data is 256 small TFRecord files of 16 records each. Opening a file costs a round trip to
remote storage (object stores and network file systems answer the first byte after ~10-30 ms);
here `remote_open` sleeps 15 ms, as such a client call blocks. The user interleaves the files with
`cycle_length=8` but without `num_parallel_calls`, so the files are opened one at a time and each
open stalls the whole pipeline.

Expected answer and why:
- bottleneck `input`: ~1 ms of waiting per record, far slower than the small MLP step.
- stage `interleave(read_file)`: the opens inside it are the wait; the parse map after it is cheap.
- CPU: mostly idle while the step waits — the time is spent waiting, not computing.
- right: `interleave` (open several files at once: `num_parallel_calls`), `threading` (more
  reads in flight than cores, since each one mostly waits).
- wrong: `cache` (the file order is shuffled every epoch: a cache after the interleave would freeze
  the first epoch's order), `tf_data_service` (the CPUs are idle: more machines cannot help a
  wait), step-side fixes.
"""

import os
import time

import keras
import numpy as np
import tensorflow as tf
from _common import STEP_FIXES, Expected, data_dir

EXPECTED = Expected(
    bottleneck="input",
    stage="interleave(read_file)",
    right_fixes=("interleave", "threading"),
    wrong_fixes=("cache", "tf_data_service") + STEP_FIXES,
)

FILES, PER_FILE, FEATURES = 256, 16, 256
OPEN_LATENCY_S = 0.015


def _write(folder):
    rng = np.random.default_rng(2)
    for f in range(FILES):
        with tf.io.TFRecordWriter(os.path.join(folder, f"part-{f:04d}.tfrecord")) as writer:
            for i in range(PER_FILE):
                x = rng.normal(size=FEATURES).astype(np.float32)
                writer.write(tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[(f + i) % 10])),
                })).SerializeToString())


def _files():
    folder = data_dir("small_files_latency-v1", _write)
    return sorted(os.path.join(folder, f) for f in os.listdir(folder))


def _remote_open(path):
    time.sleep(OPEN_LATENCY_S)  # the storage round trip before the first byte
    return path


def remote_open(path):
    path = tf.py_function(_remote_open, [path], tf.string)
    path.set_shape([])
    return path


def read_file(path):
    """One small remote file: a round trip to open it, then its records. The open happens when
    the file is first read (as with a remote file system), not when the interleave is set up."""
    return tf.data.Dataset.from_tensors(path).map(remote_open).flat_map(tf.data.TFRecordDataset)


def parse(record):
    f = tf.io.parse_single_example(record, {
        "x": tf.io.FixedLenFeature([FEATURES], tf.float32),
        "y": tf.io.FixedLenFeature([], tf.int64),
    })
    return f["x"], f["y"]


def make_dataset(batch_size=64):
    files = tf.data.Dataset.from_tensor_slices(_files()).shuffle(FILES).repeat()
    ds = files.interleave(read_file, cycle_length=8)
    return ds.map(parse).batch(batch_size)


def expert_dataset(batch_size=64):
    files = tf.data.Dataset.from_tensor_slices(_files()).shuffle(FILES).repeat()
    ds = files.interleave(read_file, cycle_length=32, num_parallel_calls=32, deterministic=False)
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(batch_size).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.threading.private_threadpool_size = 48  # more blocking opens in flight than cores
    return ds.with_options(options)


def make_model():
    model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
