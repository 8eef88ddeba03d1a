"""TensorFlow on the GPU, input-bound: a Keras CNN (KERAS_BACKEND=tensorflow, the TensorFlow GPU
build) fed by a JPEG decode: `from_tensor_slices(jpegs).repeat().map(decode)` with no
num_parallel_calls (issue 25, item 2).

256 JPEGs of 256x256 are made in memory at import (no files). A batch of 64 needs 64 decodes and
resizes to 128x128; the small CNN's train step on the H200 takes under 2 ms.

Meant as a serial decode, it is not one: `decode` is stateless, so tf.data's map_parallelization
runs it on every core (H200 machine, 2026-12-02: 13.1 of 16 cores busy with the pipeline alone,
475 batches/s against the free step's 651). The expected fix was then caching the 256 decoded
images before repeat() (issue 25's second miss), until plain TensorFlow said otherwise on the H200
(`benchmarks/tf_gpu/cache_move.py`, 2026-12-02, run 21 in docs/gpu-validation.md): training fed by
the original ran 381 batches/s, by the moved cache 325, by the expert's parallel map + cache +
prefetch 308, although the cached pipeline alone ran 4,455 batches/s. Each batch is 12 MiB of
float32 pixels and its copy to the GPU (0.56-0.61 ms by pipediag's hand-over) plus the step
leave no room for a faster pipeline to show; why the cached batches train slower is not known.
What does help there is taking the copy out of line (run 23, the same script): the original pipeline
with `prefetch_to_device('/gpu:0')` trained 425 batches/s (410-435) against the original's 371
(337-373), 1.15x; uint8 pixels (a quarter of the bytes) with the moved cache 400 (1.08x).
Expected answer and why: input (the pipeline alone delivers 0.7-0.9x what the step takes), the
slow stage the decode map, and the right fix the copy made ahead of the step (`device_prefetch`,
offered unmeasured: fixes/device_copy.py); the step's fixes are wrong ones. (On the 2-core machine,
where the decode is the whole cost and no copy is made, the moved cache measures 1.16x in training.)
"""

import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import STEP_FIXES, Expected  # noqa: E402
from keras_input import keras_on  # noqa: E402

ENV = {"KERAS_BACKEND": "tensorflow"}  # set before Keras is first imported: the benchmarks run it so
EXPECTED = Expected(bottleneck="input", stage="map(decode)", right_fixes=("device_prefetch",), wrong_fixes=STEP_FIXES)

SIDE = 128


def _jpegs(n=256, side=256):
    rng = np.random.default_rng(0)
    # Smooth images (a low-resolution pattern scaled up) compress like photographs, not like noise.
    small = rng.integers(0, 255, size=(n, side // 16, side // 16, 3), dtype=np.uint8)
    big = tf.image.resize(small, (side, side), method="bilinear")
    return [tf.io.encode_jpeg(tf.cast(img, tf.uint8), quality=90).numpy() for img in big]


def decode(data, label):
    image = tf.io.decode_jpeg(data, channels=3)
    image = tf.image.resize(image, (SIDE, SIDE)) / 255.0
    return image, label


def make_dataset(batch_size=64, parallel=False):
    jpegs = _jpegs()
    labels = (np.arange(len(jpegs)) % 10).astype("int32")
    calls = tf.data.AUTOTUNE if parallel else None
    ds = tf.data.Dataset.from_tensor_slices((jpegs, labels)).repeat().map(decode, num_parallel_calls=calls)
    return ds.batch(batch_size)


def expert_dataset(batch_size=64):
    """The 256 decoded images cached before repeat(): each is decoded once."""
    jpegs = _jpegs()
    labels = (np.arange(len(jpegs)) % 10).astype("int32")
    ds = tf.data.Dataset.from_tensor_slices((jpegs, labels)).map(decode, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.cache().repeat().batch(batch_size).prefetch(tf.data.AUTOTUNE)


def make_model():
    keras = keras_on("tensorflow")
    model = keras.Sequential([
        keras.Input((SIDE, SIDE, 3)),
        keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
        keras.layers.Conv2D(64, 3, strides=2, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
