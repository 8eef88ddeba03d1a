"""The TensorFlow image classification tutorial's fast form: cache, shuffle, prefetch, a heavy CPU step.

Source: the TensorFlow tutorial "Image classification", tensorflow.org/tutorials/images/classification
(github.com/tensorflow/docs, `site/en/tutorials/images/classification.ipynb`):
`tf.keras.utils.image_dataset_from_directory(data_dir, validation_split=0.2, subset="training",
seed=123, image_size=(180, 180), batch_size=32)`, then its "Configure the dataset for performance"
step `train_ds.cache().shuffle(1000).prefetch(buffer_size=AUTOTUNE)`; the model of its
"Data augmentation" section: `data_augmentation` (RandomFlip("horizontal"), RandomRotation(0.1),
RandomZoom(0.1)) inside the model, Rescaling(1./255), Conv2D 16/32/64 with max pooling, Dropout(0.2),
Flatten, Dense(128), Dense(num_classes); Adam, sparse categorical cross-entropy from logits.
The pipeline is already cached, its batches come from memory, and the augmentation runs in the
model: the planted class is "already fast input feeding a heavy step on the CPU".

Changed to run here: a local `flower_photos/<5 classes>` folder of 5 x 48 photo-like 320x240 JPEGs
(fixed seed) instead of the 3,670-photo download; image_size 128x128 and batch 8 (the tutorial:
180x180, 32): the tutorial's model took ~2 s a step at its own sizes here, too slow for a
diagnosis of a few seconds; the model is otherwise the tutorial's, unchanged; `.repeat()` after the
tutorial's `prefetch` stands for its epochs (the cache fills during the first epoch: 24 batches).

Expected answer and why (from plain-TensorFlow measurements: see MEASURED below):
- bottleneck `compute`: the cached pipeline alone gives batches far faster (>10x) than the model
  steps with a constant batch.
- stage: none.
- right: none required (on a GPU, `mixed_precision` or `xla` would speed the step).
- wrong: every input-side fix: the input is cached, parallel and prefetched already.

MEASURED (plain TensorFlow/Keras, 2026-12-01, the shared 2-core machine: a throwaway script times
`train_on_batch` on one constant batch (free step), fed by `make_dataset`, `make_dataset` alone,
`expert_dataset` alone and fed; 3 warm-up batches, then 3 s each, two repeats back to back. Run
WITHOUT the CPU lock (its queue held five other jobs), so other sessions' work ran beside it: the
margins below are far wider than the spread between repeats.)
batch 8: free step 15.2 / 14.2 steps/s; fed 10.9 / 15.3; pipeline alone 3,294 / 3,178 batches/s
(>200x the free step: far beyond the 10x the class asks for).
"""

import os
import sys

import keras
import numpy as np
import tensorflow as tf
from keras import layers

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import INPUT_FIXES, Expected, data_dir, photo_like  # noqa: E402

EXPECTED = Expected(
    bottleneck="compute",
    stage=None,
    right_fixes=(),
    wrong_fixes=INPUT_FIXES,
)

CLASSES = ["daisy", "dandelion", "roses", "sunflowers", "tulips"]
PER_CLASS = 48
batch_size = 8
img_height = 128
img_width = 128
EXPERT_WARMUP_BATCHES = len(CLASSES) * PER_CLASS * 4 // 5 // batch_size  # one epoch: fills the cache


def _write(folder):
    rng = np.random.default_rng(81)
    for name in CLASSES:
        os.makedirs(os.path.join(folder, "flower_photos", name))
        for i in range(PER_CLASS):
            image = photo_like(rng, 320)[:240]
            tf.io.write_file(os.path.join(folder, "flower_photos", name, f"{i}.jpg"), tf.io.encode_jpeg(image, quality=90))


def _data_dir():
    return os.path.join(data_dir("real-kerasio_cached_heavy_step-v1", _write), "flower_photos")


def make_dataset(batch_size=batch_size):
    train_ds = tf.keras.utils.image_dataset_from_directory(
        _data_dir(),
        validation_split=0.2,
        subset="training",
        seed=123,
        image_size=(img_height, img_width),
        batch_size=batch_size)
    AUTOTUNE = tf.data.AUTOTUNE
    train_ds = train_ds.cache().shuffle(1000).prefetch(buffer_size=AUTOTUNE)
    return train_ds.repeat()


def expert_dataset(batch_size=batch_size):
    return make_dataset(batch_size)  # the tutorial's fast form already; the input is not the limit


def make_model():
    num_classes = len(CLASSES)
    data_augmentation = keras.Sequential([
        layers.RandomFlip("horizontal"),
        layers.RandomRotation(0.1),
        layers.RandomZoom(0.1),
    ])
    model = keras.Sequential([
        keras.Input((img_height, img_width, 3)),
        data_augmentation,
        layers.Rescaling(1. / 255),
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Dropout(0.2),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dense(num_classes, name="outputs"),
    ])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model
