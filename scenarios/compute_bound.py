"""An already well-tuned pipeline with a heavy model (compute-bound: no input changes).

In-memory features, shuffled, batched and prefetched: the input costs almost nothing. The model
is an MLP with three 2,048-wide layers: tens of milliseconds per step on two cores.

Expected answer and why:
- bottleneck `compute`: the step alone (synthetic input) runs no faster than fed by the pipeline.
- stage: none — no stage of the pipeline is at fault.
- right: none required (on a GPU, `mixed_precision` or `xla` would speed the step; on this CPU
  pipediag cannot measure them).
- wrong: every input-side fix: the pipeline is not what limits training.
"""

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

ROWS, FEATURES = 8192, 256
_rng = np.random.default_rng(8)
_X = _rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
_Y = (np.arange(ROWS) % 10).astype(np.int64)


def make_dataset(batch_size=64):
    ds = tf.data.Dataset.from_tensor_slices((_X, _Y)).shuffle(ROWS).repeat()
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def expert_dataset(batch_size=64):
    return make_dataset(batch_size)  # nothing to change: the input is not the limit


def make_model():
    model = keras.Sequential(
        [keras.Input((FEATURES,))]
        + [keras.layers.Dense(2048, activation="relu") for _ in range(3)]
        + [keras.layers.Dense(10)]
    )
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
