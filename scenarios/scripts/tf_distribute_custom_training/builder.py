"""The TF tutorial "Custom training with tf.distribute.Strategy" refactored for `pipediag diagnose`.

The tutorial's training pipeline and step, unchanged, moved into functions: the Fashion-MNIST
arrays scaled to [0, 1] with a channel axis, `from_tensor_slices((train_images, train_labels))
.shuffle(BUFFER_SIZE).batch(GLOBAL_BATCH_SIZE)` (64 per replica); the step is its
`distributed_train_step` (`strategy.run(train_step)` under a `tf.function`, summed over replicas)
with the two-Conv2D model, Adam(0.001) and the L2-regularized loss, all made under a
MirroredStrategy's scope. On this CPU-only machine the strategy has one replica (the script sets
no devices). `.repeat()` stands for the 10 epochs. Data: the case's make_data.py output.

Expected answer and why: `compute`, no stage, no fix required, every input-side fix wrong. The
pipeline slices in-memory arrays, shuffles the whole set and batches: alone it gives ~75x the
batches the step (two Conv2D, Adam, ~26 ms on 2 CPU cores) takes.

MEASURED (plain TensorFlow, 2026-12-02 11:32 UTC, the shared 2-core machine holding /tmp/cpu.lock,
`python benchmarks/real_truth.py scenarios/scripts/tf_distribute_custom_training/builder.py
--seconds 4 --prefix-seconds 1 --repeats 2`; median (range), per second): free step 38.1
(35.2-41.0) steps; input alone 2870 (2170-3570) batches; fed 35.0 (32.2-37.7) steps. Input alone /
free = 75.
"""

import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import INPUT_FIXES, Expected, case_root, load_maker  # noqa: E402

CASE = "tf_distribute_custom_training"
EXPECTED = Expected(bottleneck="compute", stage=None, right_fixes=(), wrong_fixes=INPUT_FIXES)

BATCH_SIZE_PER_REPLICA = 64
_strategy = None


def _get_strategy():
    global _strategy
    if _strategy is None:
        _strategy = tf.distribute.MirroredStrategy()
    return _strategy


def make_dataset():
    strategy = _get_strategy()
    train_images, train_labels = load_maker(CASE).arrays(case_root(CASE))
    train_images = train_images[..., None]
    train_images = train_images / np.float32(255)
    BUFFER_SIZE = len(train_images)
    GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync
    train_dataset = tf.data.Dataset.from_tensor_slices((train_images, train_labels)).shuffle(BUFFER_SIZE).batch(GLOBAL_BATCH_SIZE)
    return train_dataset.repeat()


def create_model():
    regularizer = tf.keras.regularizers.L2(1e-5)
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(32, 3,
                               activation='relu',
                               kernel_regularizer=regularizer),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(64, 3,
                               activation='relu',
                               kernel_regularizer=regularizer),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64,
                              activation='relu',
                              kernel_regularizer=regularizer),
        tf.keras.layers.Dense(10, kernel_regularizer=regularizer)
    ])
    return model


def make_step():
    strategy = _get_strategy()
    with strategy.scope():
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True,
            reduction=tf.keras.losses.Reduction.NONE)

        def compute_loss(labels, predictions, model_losses):
            per_example_loss = loss_object(labels, predictions)
            loss = tf.nn.compute_average_loss(per_example_loss)
            if model_losses:
                loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))
            return loss

        train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name='train_accuracy')
        model = create_model()
        optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)

    def train_step(inputs):
        images, labels = inputs
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            loss = compute_loss(labels, predictions, model.losses)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        train_accuracy.update_state(labels, predictions)
        return loss

    @tf.function
    def distributed_train_step(dataset_inputs):
        per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses,
                               axis=None)

    return distributed_train_step
