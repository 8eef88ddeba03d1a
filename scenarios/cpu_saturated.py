"""Preprocessing that already uses every core: only less work, or more machines, can help.

JPEGs (448x448, as stored photographs often are) are decoded, randomly cropped to 224, resized
to 112 and flipped in one `map(decode_and_augment)` that the user already runs with
`num_parallel_calls=AUTOTUNE`, followed by `prefetch`. Both cores decode flat out; the small CNN
still waits. The dataset stands for a large image collection (here 256 distinct JPEGs repeated),
too large to cache decoded.

Expected answer and why:
- bottleneck `input`: the input alone delivers fewer batches than the step takes.
- stage `parallel_map(decode_and_augment)`.
- CPU: saturated.
- right: `decode_crop`: the expert version decodes only the crop window
  (`tf.image.decode_and_crop_jpeg`), ~4x fewer pixels per image; pipediag makes the same change
  by rewriting the traced function. `tf_data_service` (move the decoding to more machines) is
  right too when the cores stay full after that.
- wrong: `parallel_map` and `prefetch` (already there), `threading` (the cores are busy: more
  threads than cores only queue), `interleave` (one in-memory source), `cache@parallel_map(decode_and_augment)`
  (would freeze the random crops), step-side fixes.
"""

import keras
import numpy as np
import tensorflow as tf
from _common import STEP_FIXES, Expected, jpeg_bytes

EXPECTED = Expected(
    bottleneck="input",
    stage="parallel_map(decode_and_augment)",
    right_fixes=("decode_crop", "tf_data_service"),
    wrong_fixes=("parallel_map", "prefetch", "threading", "interleave", "cache@parallel_map(decode_and_augment)")
    + STEP_FIXES,
)

IMAGES, JPEG_SIZE, CROP, OUT = 256, 448, 224, 112
_JPEGS = None


def _data():
    global _JPEGS
    if _JPEGS is None:
        _JPEGS = jpeg_bytes(IMAGES, JPEG_SIZE, seed=12)
    return _JPEGS, (np.arange(IMAGES) % 10).astype(np.int64)


def decode_and_augment(jpeg, label):
    image = tf.io.decode_jpeg(jpeg, channels=3)
    image = tf.image.random_crop(image, [CROP, CROP, 3])
    image = tf.image.resize(image, [OUT, OUT]) / 255.0
    return tf.image.random_flip_left_right(image), label


def decode_crop_and_augment(jpeg, label):
    offset = tf.random.uniform([2], 0, JPEG_SIZE - CROP + 1, dtype=tf.int32)
    image = tf.image.decode_and_crop_jpeg(jpeg, tf.concat([offset, [CROP, CROP]], 0), channels=3)
    image = tf.image.resize(image, [OUT, OUT]) / 255.0
    return tf.image.random_flip_left_right(image), label


def make_dataset(batch_size=32):
    ds = tf.data.Dataset.from_tensor_slices(_data()).repeat()
    ds = ds.map(decode_and_augment, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def expert_dataset(batch_size=32):
    ds = tf.data.Dataset.from_tensor_slices(_data()).repeat()
    ds = ds.map(decode_crop_and_augment, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def make_model():
    model = keras.Sequential([
        keras.Input((OUT, OUT, 3)),
        keras.layers.Conv2D(8, 3, strides=4, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
