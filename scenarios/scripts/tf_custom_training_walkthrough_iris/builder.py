"""The TF tutorial "Custom training: walkthrough", as published until 2022-02-08 (Iris),
refactored for `pipediag diagnose`.

The tutorial's training pipeline and step, unchanged, moved into functions:
`tf.data.experimental.make_csv_dataset(train_dataset_fp, 32, column_names=..., label_name=
'species', num_epochs=1)` (its defaults: the file's rows shuffled in a 10,000-element buffer,
parsed row by row), `.map(pack_features_vector)` (the four feature columns stacked); the step is
its eager loop body (no `tf.function`): `grad()` under a GradientTape over the Sequential
Dense(10)-Dense(10)-Dense(3), SGD(0.01), sparse categorical cross-entropy from logits, then the
epoch's two metrics updated (the accuracy with a second forward pass), as the tutorial's loop
does. `.repeat()` stands for the 201 epochs. Data: the case's make_data.py output.

Expected answers and why, two of them:

- The builder form (`EXPECTED`): `compute`, no stage, every input-side fix wrong. In one
  iterator over `repeat()` each pass's restart (the CSV opened again, the shuffle buffer
  refilled) happens inside the pipeline, behind make_csv_dataset's own prefetch, and the eager
  step is the limit. The right fix is `tf_function`: the step wrapped in tf.function ran 24x
  as fast (below).
- The script as published (`RUN_EXPECTED`, `pipediag run`): `input`, no stage, at each epoch's
  start. Its loop makes a new iterator every epoch (`for x, y in train_dataset:` inside `for
  epoch in range(201):`), and an epoch is 4 batches: every 4 steps the loop waits for a new
  iterator to be made and for its shuffle buffer to refill from the file. The right fix is
  `one_iterator`; the pipeline's own stages need nothing. Between the starts the eager step is
  the limit, and `tf_function` is right there too.

MEASURED (plain TensorFlow, 2026-12-07 13:43-13:46 UTC, the shared 2-core machine holding
/tmp/cpu.lock): `python benchmarks/real_truth.py scenarios/scripts/tf_custom_training_walkthrough_iris/
builder.py --seconds 4 --prefix-seconds 1 --repeats 2`, median (range), per second: free step 76.0
(70.8-81.2) steps; input alone 1124 (1110-1139) batches; fed 66.4 (65.3-67.6) steps. Input alone /
free = 14.8. `python benchmarks/epoch_start_truth.py scenarios/scripts/tf_custom_training_walkthrough_iris/
builder.py` (40 epochs of 4 batches a round, 5 rounds): a new iterator each epoch 3.710 s median,
one iterator over repeat() 2.350 s, one batch repeated 2.192 s; new / one iterator 1.58x of the
medians (per round 1.58, 1.57, 1.64, 1.55, 1.80). `python benchmarks/eager_step_truth.py
scenarios/scripts/tf_custom_training_walkthrough_iris/builder.py` (2026-12-07 15:08 UTC, 200 steps
on one batch a round, 5 rounds): eager 63.3 steps/s median, in tf.function 1531.1; 24.17x of the
medians (per round 25.25, 25.55, 25.57, 22.37, 23.20).
"""

import os
import sys

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import INPUT_FIXES, Expected, case_root, load_maker  # noqa: E402

CASE = "tf_custom_training_walkthrough_iris"
EXPECTED = Expected(bottleneck="compute", stage=None, right_fixes=("tf_function",), wrong_fixes=INPUT_FIXES)
RUN_EXPECTED = Expected(bottleneck="input", stage=None, right_fixes=("one_iterator", "tf_function"),
                        wrong_fixes=INPUT_FIXES)

column_names = ['sepal_length', 'sepal_width', 'petal_length', 'petal_width', 'species']
label_name = column_names[-1]
batch_size = 32


def pack_features_vector(features, labels):
    """Pack the features into a single array."""
    features = tf.stack(list(features.values()), axis=1)
    return features, labels


def make_epoch_dataset():
    """One epoch, as the tutorial's loop iterates it (benchmarks/epoch_start_truth.py)."""
    train_dataset_fp = load_maker(CASE).csv_path(case_root(CASE))
    train_dataset = tf.data.experimental.make_csv_dataset(
        train_dataset_fp,
        batch_size,
        column_names=column_names,
        label_name=label_name,
        num_epochs=1)
    return train_dataset.map(pack_features_vector)


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
