"""The TF tutorial "TensorFlow 2 quickstart for experts" refactored for `pipediag diagnose`.

The tutorial's training pipeline and step, unchanged, moved into functions: the MNIST arrays
scaled to [0, 1] with a channel axis, `from_tensor_slices((x_train, y_train)).shuffle(10000)
.batch(32)`; the step is its `@tf.function train_step(images, labels)` (GradientTape over
`MyModel`: Conv2D(32) + Dense(128) + Dense(10), Adam, sparse categorical cross-entropy from
logits, the two metrics updated), called on the batch's two parts as the tutorial's loop calls it.
`.repeat()` stands for the 5 epochs. Data: the case's make_data.py output.

Expected answer and why: `compute`, no stage, no fix required, every input-side fix wrong. The
pipeline slices in-memory arrays, shuffles and batches: alone it gives ~110x the batches the step
(Conv2D(32) then a 21632 x 128 Dense, with Adam, ~30 ms on 2 CPU cores) takes.

MEASURED (plain TensorFlow, 2026-12-02 11:13 UTC, the shared 2-core machine holding /tmp/cpu.lock,
`python benchmarks/real_truth.py scenarios/scripts/tf_quickstart_advanced/builder.py --seconds 4
--prefix-seconds 1 --repeats 2`; median (range), per second): free step 33.8 (32.4-35.1) steps;
input alone 3750 (3720-3779) batches; fed 32.8 (32.1-33.5) steps. Input alone / free = 111.
"""

import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.keras import Model
from tensorflow.keras.layers import Conv2D, Dense, Flatten

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import INPUT_FIXES, Expected, case_root, load_maker  # noqa: E402

CASE = "tf_quickstart_advanced"
EXPECTED = Expected(bottleneck="compute", stage=None, right_fixes=(), wrong_fixes=INPUT_FIXES)


def make_dataset():
    with np.load(load_maker(CASE).npz_path(case_root(CASE))) as f:
        x_train, y_train = f["x_train"], f["y_train"]
    x_train = x_train / 255.0
    x_train = x_train[..., tf.newaxis].astype("float32")
    train_ds = tf.data.Dataset.from_tensor_slices(
        (x_train, y_train)).shuffle(10000).batch(32)
    return train_ds.repeat()


class MyModel(Model):
    def __init__(self):
        super().__init__()
        self.conv1 = Conv2D(32, 3, activation='relu')
        self.flatten = Flatten()
        self.d1 = Dense(128, activation='relu')
        self.d2 = Dense(10)

    def call(self, x):
        x = self.conv1(x)
        x = self.flatten(x)
        x = self.d1(x)
        return self.d2(x)


def make_step():
    model = MyModel()
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = tf.keras.optimizers.Adam()
    train_loss = tf.keras.metrics.Mean(name='train_loss')
    train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name='train_accuracy')

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            loss = loss_object(labels, predictions)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        train_loss(loss)
        train_accuracy(labels, predictions)

    def step(batch):
        images, labels = batch
        return train_step(images, labels)

    return step
