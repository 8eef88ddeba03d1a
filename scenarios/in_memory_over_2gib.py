"""A training set of 2.06 GiB held in memory: `from_tensor_slices((x_train, y_train))`, the plain Keras habit.

180,000 RGB images of 64x64 as uint8 (12 KiB each, 2.06 GiB in all, over 2 GiB) and their labels,
shuffled, batched by 64 and prefetched, feed a small CNN. The array is made when the pipeline is
first built (`np.zeros`, free until written; the step's work does not depend on the values) and
nothing is stored. TensorFlow copies it into the dataset: building it brings the process to 2.8 GiB
resident, 4.8 GiB at the peak (plain TensorFlow, 2026-12-02, this 2-core 24 GiB machine).

TensorFlow writes an in-memory array into the pipeline's serialized graph as a constant, and a
graph cannot exceed 2 GiB: pipediag cannot read this pipeline's graph (until issue 27 it crashed
with its own StopIteration). It must still measure the modes that need no graph, read the stages
from the Dataset objects for its anatomy, give the right verdict, and say why there is no tuned mode.

Expected answer and why (plain TensorFlow: `benchmarks/real_truth.py`, 2026-12-02 11:25 UTC, this
2-core machine, load ~1.4): the free step 6.4 steps/s, input alone 1927 batches/s (302x the free
step), the step fed by the pipeline 7.2 steps/s (not slowed).
- bottleneck `compute`: slicing and batching rows already in memory costs far less than the step.
- stage: none — no stage of the pipeline is at fault.
- right: none required (on a GPU, `mixed_precision` or `xla` would speed the step).
- wrong: every input-side fix; above all `cache` (the data is in memory already) and
  `tf_data_service` (a pipeline whose graph is over 2 GiB cannot be sent to its workers).
"""

import functools

import keras
import numpy as np
import tensorflow as tf
from _common import INPUT_FIXES, Expected

EXPECTED = Expected(
    bottleneck="compute",
    stage=None,
    right_fixes=(),
    wrong_fixes=INPUT_FIXES,
)

ROWS, SIZE = 180_000, 64  # 180,000 x 64 x 64 x 3 bytes = 2.06 GiB


@functools.cache
def _arrays():
    """Made once per process, on first use: importing the file (to read EXPECTED) allocates nothing."""
    return np.zeros((ROWS, SIZE, SIZE, 3), np.uint8), (np.arange(ROWS) % 10).astype(np.int64)


def make_dataset(batch_size=64):
    x_train, y_train = _arrays()
    ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(10_000).repeat()
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def expert_dataset(batch_size=64):
    return make_dataset(batch_size)  # nothing to change: the input is not the limit


def make_model():
    model = keras.Sequential([
        keras.Input((SIZE, SIZE, 3), dtype="uint8"),
        keras.layers.Rescaling(1 / 255),
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
        keras.layers.Conv2D(64, 3, strides=2, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
