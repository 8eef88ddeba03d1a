"""keras-io image classification from scratch: image_dataset_from_directory, augmentation map, prefetch.

Source: github.com/keras-team/keras-io, `examples/vision/image_classification_from_scratch.py`
(`keras.utils.image_dataset_from_directory("PetImages", validation_split=0.2, subset="both",
seed=1337, image_size=(180, 180), batch_size=128)`; `data_augmentation` = RandomFlip("horizontal")
then RandomRotation(0.1), applied to the training batches in
`train_ds.map(lambda img, label: (data_augmentation(img), label), num_parallel_calls=AUTOTUNE)`
(the source's "option 2", which it recommends when training on CPU); `train_ds.prefetch(AUTOTUNE)`;
`make_model`: the small Xception-style network, Adam(3e-4), binary cross-entropy from logits).

Changed to run here: a local `PetImages/{Cat,Dog}` folder of 2 x 160 photo-like 400x300 JPEGs
(fixed seed) instead of the Kaggle download (so no corrupted-file filter is needed); batch 16
(source: 128) and the network's widths divided by 4 (entry 32, blocks 64/128/182, exit 256; the
source: 128, 256/512/728, 1024) for 2 CPU cores. (Divided by 8 the step sat too near the pipeline's
speed for a clear answer: the pipeline alone gave 1.8-4.0x the free step in two repeats.)
`.repeat()` stands for the source's epochs.

Expected answer and why (from plain-TensorFlow measurements: see MEASURED below):
- bottleneck `compute`: the pipeline alone (parallel JPEG decode and resize inside
  `image_dataset_from_directory`, the augmentation map on whole batches) gives 6-12x the batches
  the network steps through with a constant batch. On a CPU the source's network is the limit.
- stage: none.
- right: none required (on a GPU, `mixed_precision` or `xla` would speed the step).
- wrong: every input-side fix.

MEASURED (plain TensorFlow/Keras, 2026-12-01, the shared 2-core machine: a throwaway script times
`train_on_batch` on one constant batch (free step), fed by `make_dataset`, `make_dataset` alone,
`expert_dataset` alone and fed; 3 warm-up batches, then 3 s each, two repeats back to back. Run
WITHOUT the CPU lock (its queue held five other jobs), so other sessions' work ran beside it: the
margins below are far wider than the spread between repeats.)
batch 16: free step 1.00 / 0.55 steps/s; fed 1.13 / 1.01; pipeline alone 7.5 / 6.6 batches/s (6.6-12x
the free step). With the widths divided by 8 instead: free 3.1 / 2.3 steps/s, fed 2.2 / 1.5, alone
5.6 / 9.3 batches/s: too near for a clear answer, hence the divisor 4.
"""

import os
import sys

import keras
import numpy as np
import tensorflow as tf
from keras import layers
from tensorflow import data as tf_data

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import INPUT_FIXES, Expected, data_dir, photo_like  # noqa: E402

EXPECTED = Expected(
    bottleneck="compute",
    stage=None,
    right_fixes=(),
    wrong_fixes=INPUT_FIXES,
)

PER_CLASS = 160
image_size = (180, 180)
WIDTH_DIVISOR = 4


def _write(folder):
    rng = np.random.default_rng(61)
    for name in ("Cat", "Dog"):
        os.makedirs(os.path.join(folder, "PetImages", name))
        for i in range(PER_CLASS):
            image = photo_like(rng, 400)[:300]
            data = tf.io.encode_jpeg(image, quality=90)
            tf.io.write_file(os.path.join(folder, "PetImages", name, f"{i}.jpg"), data)


def _folder():
    return os.path.join(data_dir("real-kerasio_image_classification_from_scratch-v1", _write), "PetImages")


data_augmentation_layers = [
    layers.RandomFlip("horizontal"),
    layers.RandomRotation(0.1),
]


def data_augmentation(images):
    for layer in data_augmentation_layers:
        images = layer(images)
    return images


def _load(batch_size):
    train_ds, val_ds = keras.utils.image_dataset_from_directory(
        _folder(),
        validation_split=0.2,
        subset="both",
        seed=1337,
        image_size=image_size,
        batch_size=batch_size,
    )
    return train_ds


def make_dataset(batch_size=16):
    train_ds = _load(batch_size)
    # Apply `data_augmentation` to the training images.
    train_ds = train_ds.map(
        lambda img, label: (data_augmentation(img), label),
        num_parallel_calls=tf_data.AUTOTUNE,
    )
    # Prefetching samples in GPU memory helps maximize GPU utilization.
    train_ds = train_ds.prefetch(tf_data.AUTOTUNE)
    return train_ds.repeat()


def expert_dataset(batch_size=16):
    return make_dataset(batch_size)  # the source's own form (its "option 2", recommended on CPU)


def _make_model(input_shape, num_classes):
    w = WIDTH_DIVISOR
    inputs = keras.Input(shape=input_shape)
    # Entry block
    x = layers.Rescaling(1.0 / 255)(inputs)
    x = layers.Conv2D(128 // w, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    previous_block_activation = x  # Set aside residual
    for size in [256 // w, 512 // w, 728 // w]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        # Project residual
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual
    x = layers.SeparableConv2D(1024 // w, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    if num_classes == 2:
        units = 1
    else:
        units = num_classes
    x = layers.Dropout(0.25)(x)
    # We specify linear activation since we are using logits.
    outputs = layers.Dense(units, activation=None)(x)
    return keras.Model(inputs, outputs)


def make_model():
    model = _make_model(input_shape=image_size + (3,), num_classes=2)
    model.compile(
        optimizer=keras.optimizers.Adam(3e-4),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=[keras.metrics.BinaryAccuracy(name="acc")],
    )
    return model
