"""JPEG images decoded serially from TFRecord shards.

The pipeline reads locally written TFRecord shards of JPEG bytes and labels, and decodes, resizes
and randomly flips each image in one `map(decode_jpeg)`. Because the function draws random
numbers, TensorFlow's `map_parallelization` rewrite cannot prove it safe and leaves it serial: one
core decodes while the model waits.

Expected answer and why:
- bottleneck `input`: the decode alone delivers fewer batches than the small CNN can take.
- stage `map(decode_jpeg)`: it holds all the per-image work (parse, JPEG decode, resize, flip);
  reading a few MB of local records is cheap next to it.
- right: `parallel_map` (the decode is independent per image: `num_parallel_calls=AUTOTUNE` uses
  every core). `prefetch` (overlap with the step) is fine but does not address the cause.
- wrong: a `cache` after `map(decode_jpeg)` would freeze the random flips (every epoch would see
  the same augmentation); step-side fixes (the step is not the limit).
"""

import keras
import tensorflow as tf
from _common import STEP_FIXES, Expected, data_dir, shard_paths, write_jpeg_shards

EXPECTED = Expected(
    bottleneck="input",
    stage="map(decode_jpeg)",
    right_fixes=("parallel_map",),
    wrong_fixes=("cache@map(decode_jpeg)",) + STEP_FIXES,
)

SHARDS, PER_SHARD, JPEG_SIZE, IMAGE_SIZE = 4, 64, 256, 96


def _files():
    return shard_paths(data_dir("jpeg_tfrecord_serial-v1",
                                lambda d: write_jpeg_shards(d, SHARDS, PER_SHARD, JPEG_SIZE, seed=1)))


def decode_jpeg(record):
    features = tf.io.parse_single_example(record, {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    })
    image = tf.io.decode_jpeg(features["image"], channels=3)
    image = tf.image.resize(image, [IMAGE_SIZE, IMAGE_SIZE]) / 255.0
    image = tf.image.random_flip_left_right(image)
    return image, features["label"]


def make_dataset(batch_size=32):
    ds = tf.data.TFRecordDataset(_files()).repeat()
    ds = ds.map(decode_jpeg)
    return ds.batch(batch_size)


def expert_dataset(batch_size=32):
    ds = tf.data.TFRecordDataset(_files(), num_parallel_reads=tf.data.AUTOTUNE).repeat()
    ds = ds.map(decode_jpeg, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def make_model():
    model = keras.Sequential([
        keras.Input((IMAGE_SIZE, IMAGE_SIZE, 3)),
        keras.layers.Conv2D(8, 3, strides=4, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
