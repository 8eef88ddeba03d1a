"""A dataset far larger than RAM: an in-memory cache would be wrong; snapshot to disk may be right.

Two million 128x128 RGB float images (~366 GiB decoded, 15x this machine's 24 GiB) are rendered
on the fly from their index by `map(synthesize)` — deterministic (a stateless random field,
blurred), and expensive — then randomly flipped. The cardinality is known and finite, but the
data is never materialised: a diagnosis touches a few hundred batches.

Expected answer and why:
- bottleneck `input`: rendering saturates both cores and still feeds fewer batches than the step.
- stage `map(synthesize)`.
- right: `snapshot` to disk (done once, then the preprocessed images are read back; on disk the
  366 GiB fit, in RAM they do not) or `tf_data_service` (more machines render in parallel). On one
  host that is all: `synthesize` is stateless, so TensorFlow already runs it on every core.
- wrong: `cache` — in memory it would grow until the host runs out of RAM, a crash an epoch in;
  step-side fixes.
The expert version (what fits in a benchmark) sets the parallelism and prefetch explicitly, which
is all a single host allows; the file's point is what pipediag must *not* recommend.
"""

import keras
import tensorflow as tf
from _common import STEP_FIXES, Expected

EXPECTED = Expected(
    bottleneck="input",
    stage="map(synthesize)",
    right_fixes=("snapshot", "tf_data_service"),
    wrong_fixes=("cache",) + STEP_FIXES,
)

IMAGES, SIZE = 2_000_000, 128
_BLUR = tf.ones([5, 5, 3, 1]) / 25.0


def synthesize(index):
    field = tf.random.stateless_uniform([1, SIZE, SIZE, 3], seed=tf.stack([index, 7]))
    for _ in range(4):  # smooth it: the expensive, deterministic part
        field = tf.nn.depthwise_conv2d(field, _BLUR, strides=[1, 1, 1, 1], padding="SAME")
    return field[0], index % 10


def flip(image, label):
    return tf.image.random_flip_left_right(image), label


def make_dataset(batch_size=32):
    ds = tf.data.Dataset.range(IMAGES).map(synthesize).map(flip)
    return ds.batch(batch_size)


def expert_dataset(batch_size=32):
    ds = tf.data.Dataset.range(IMAGES).map(synthesize, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.map(flip, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def make_model():
    model = keras.Sequential([
        keras.Input((SIZE, SIZE, 3)),
        keras.layers.Conv2D(8, 3, strides=4, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
