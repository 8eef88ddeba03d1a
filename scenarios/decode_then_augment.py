"""An expensive deterministic decode followed by random augmentation (cache between them).

512 JPEGs (384x384) in a TFRecord file are decoded and resized by `map(decode)` — the same result
every epoch — then randomly cropped and flipped by `map(augment)`, batched and repeated. Every
epoch redoes the decode, which is most of the work.

Expected answer and why:
- bottleneck `input`: decoding 384x384 JPEGs on two cores is slower than the small CNN step.
- stage `map(decode)`: it is deterministic and holds the JPEG decode; `map(augment)` is a cheap crop.
- right: `cache` after `map(decode)`: the decoded set is ~100 MB and fits in memory, the second
  epoch on reads it back (the expert version). `prefetch` is fine but not the answer.
- wrong: `cache@map(augment)`: a cache after the random augmentation would replay the first
  epoch's crops and flips forever; step-side fixes.
"""

import keras
import tensorflow as tf
from _common import STEP_FIXES, Expected, data_dir, shard_paths, write_jpeg_shards

EXPECTED = Expected(
    bottleneck="input",
    stage="map(decode)",
    right_fixes=("cache",),
    wrong_fixes=("cache@map(augment)",) + STEP_FIXES,
)

IMAGES, JPEG_SIZE, DECODED, CROP = 512, 384, 128, 112
EXPERT_WARMUP_BATCHES = IMAGES // 32  # one epoch: fills the expert's cache before timing


def _files():
    return shard_paths(data_dir("decode_then_augment-v1", lambda d: write_jpeg_shards(d, 1, IMAGES, JPEG_SIZE, seed=5)))


def decode(record):
    f = tf.io.parse_single_example(record, {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    })
    image = tf.image.resize(tf.io.decode_jpeg(f["image"], channels=3), [DECODED, DECODED])
    return image / 255.0, f["label"]


def augment(image, label):
    image = tf.image.random_crop(image, [CROP, CROP, 3])
    return tf.image.random_flip_left_right(image), label


def make_dataset(batch_size=32):
    ds = tf.data.TFRecordDataset(_files()).map(decode).map(augment)
    return ds.batch(batch_size).repeat()


def expert_dataset(batch_size=32):
    ds = tf.data.TFRecordDataset(_files()).map(decode, num_parallel_calls=tf.data.AUTOTUNE).cache()
    ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size).repeat().prefetch(tf.data.AUTOTUNE)


def make_model():
    model = keras.Sequential([
        keras.Input((CROP, CROP, 3)),
        keras.layers.Conv2D(8, 3, strides=4, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
