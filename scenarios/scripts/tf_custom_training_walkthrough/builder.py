"""The TF tutorial "Custom training: walkthrough" refactored for `pipediag diagnose`.

The tutorial's training pipeline and step, unchanged, moved into functions:
`tfds.load("penguins/processed", split='train[20%:]', as_supervised=True)` (267 examples of 4
features), `.batch(32)`; the step is its eager loop body (no `tf.function`): `grad()` under a
GradientTape over the Sequential Dense(10)-Dense(10)-Dense(3), SGD(0.01), sparse categorical
cross-entropy from logits, then the epoch's two metrics updated (the accuracy with a second
forward pass, `model(x, training=True)`), as the tutorial's loop does. `.repeat()` stands for
the 201 epochs. Data: the case's make_data.py output.

Expected answer and why: `compute`, no stage, every input-side fix wrong, for the builder form
and for the script as published alike; the right fix is `tf_function`. The step runs eagerly, op
by op from Python (~16 ms on 2 CPU cores for a 32 x 4 batch), and wrapped in tf.function it ran
26x as fast (below); the pipeline reads a few kilobytes that tfds
caches (small datasets are cached by `tfds.load`) and batches them. The script's loop makes a new
iterator every 9-batch epoch, which `pipediag run` sees as epoch starts: here they cost little
(the iterator over a cached dataset starts in under a millisecond), so they must not be the
verdict. The version of this tutorial before 2022-02-08, on `make_csv_dataset`, pays a large
start every epoch: scenarios/scripts/tf_custom_training_walkthrough_iris.

MEASURED (plain TensorFlow, 2026-12-07 13:39 UTC, the shared 2-core machine holding /tmp/cpu.lock):
`python benchmarks/real_truth.py scenarios/scripts/tf_custom_training_walkthrough/builder.py
--seconds 4 --prefix-seconds 1 --repeats 2`, median (range), per second: free step 69.6
(69.4-69.9) steps; input alone 6820 (6808-6833) batches; fed 68.6 (67.6-69.6) steps. Input alone /
free = 98. `python benchmarks/epoch_start_truth.py scenarios/scripts/tf_custom_training_walkthrough/
builder.py` (40 epochs of 9 batches a round, 5 rounds): a new iterator each epoch 4.951 s median,
one iterator over repeat() 4.885 s, one batch repeated 4.554 s; new / one iterator 1.01x of the
medians (per round 1.13, 1.03, 1.02, 1.03, 1.01). `python benchmarks/eager_step_truth.py
scenarios/scripts/tf_custom_training_walkthrough/builder.py` (2026-12-07 15:08 UTC, 200 steps on
one batch a round, 5 rounds): eager 61.1 steps/s median, in tf.function 1607.2; 26.32x of the
medians (per round 26.60, 26.49, 22.71, 23.09, 27.78).
"""

import os
import sys

import tensorflow as tf
import tensorflow_datasets as tfds

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import INPUT_FIXES, Expected, case_root  # noqa: E402

CASE = "tf_custom_training_walkthrough"
EXPECTED = Expected(bottleneck="compute", stage=None, right_fixes=("tf_function",), wrong_fixes=INPUT_FIXES)


def make_epoch_dataset():
    """One epoch, as the tutorial's loop iterates it (benchmarks/epoch_start_truth.py)."""
    data_dir = os.path.join(case_root(CASE), "tensorflow_datasets")
    ds_train = tfds.load("penguins/processed", split="train[20%:]", as_supervised=True, data_dir=data_dir)
    ds_train_batch = ds_train.batch(32)
    return ds_train_batch


def make_dataset():
    return make_epoch_dataset().repeat()


def make_step():
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(10, activation=tf.nn.relu, input_shape=(4,)),  # input shape required
        tf.keras.layers.Dense(10, activation=tf.nn.relu),
        tf.keras.layers.Dense(3)
    ])
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def loss(model, x, y, training):
        y_ = model(x, training=training)
        return loss_object(y_true=y, y_pred=y_)

    def grad(model, inputs, targets):
        with tf.GradientTape() as tape:
            loss_value = loss(model, inputs, targets, training=True)
        return loss_value, tape.gradient(loss_value, model.trainable_variables)

    optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
    epoch_loss_avg = tf.keras.metrics.Mean()
    epoch_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()

    def step(batch):
        x, y = batch
        loss_value, grads = grad(model, x, y)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        epoch_loss_avg.update_state(loss_value)
        epoch_accuracy.update_state(y, model(x, training=True))
        return loss_value

    return step
