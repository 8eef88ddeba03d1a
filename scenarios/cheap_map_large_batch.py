"""A cheap per-element map before a large batch (vectorize: batch first, then map).

65,536 feature vectors in memory are shuffled, normalised one element at a time by
`map(normalize)`, and batched by 1,024. The normalisation is a few arithmetic ops on 32 floats:
the cost is the per-element function call (argument packing, scheduling), paid 1,024 times per
batch. TensorFlow already runs this stateless map in parallel (`map_parallelization`) and fuses
it with the batch, and it is still slow: there is nothing to parallelize, only calls to save.

Expected answer and why:
- bottleneck `input`: per-element overhead makes the input slower than the small MLP step.
- stage `map(normalize)`.
- right: `vectorize_map` (batch first, then one `map(normalize)` per batch of 1,024: the same
  arithmetic broadcast over the batch). `prefetch` is fine but does not address the cause.
- wrong: `parallel_map` (TensorFlow already runs it in parallel), `cache` (the only deterministic
  point is the in-memory source; after the shuffle a cache would freeze the order), `interleave`
  (no files), `snapshot`, step-side fixes.
"""

import keras
import numpy as np
import tensorflow as tf
from _common import STEP_FIXES, Expected

EXPECTED = Expected(
    bottleneck="input",
    stage="map(normalize)",
    right_fixes=("vectorize_map",),
    wrong_fixes=("parallel_map", "cache", "interleave", "snapshot") + STEP_FIXES,
)

ROWS, FEATURES = 65_536, 32
_rng = np.random.default_rng(4)
_X = _rng.normal(3.0, 2.0, size=(ROWS, FEATURES)).astype(np.float32)
_Y = (np.arange(ROWS) % 10).astype(np.int64)
MEAN, STD = _X.mean(axis=0), _X.std(axis=0)


def normalize(x, y):
    """Works on one example or on a whole batch alike: the arithmetic broadcasts."""
    return tf.clip_by_value((x - MEAN) / STD, -5.0, 5.0), y


def make_dataset(batch_size=1024):
    ds = tf.data.Dataset.from_tensor_slices((_X, _Y)).shuffle(ROWS).repeat()
    return ds.map(normalize).batch(batch_size)


def expert_dataset(batch_size=1024):
    ds = tf.data.Dataset.from_tensor_slices((_X, _Y)).shuffle(ROWS).repeat()
    return ds.batch(batch_size).map(normalize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def make_model():
    model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
