"""The tf.data performance guide's "Vectorizing mapping": a scalar map before the batch.

Source: tensorflow/docs site/en/guide/data_performance.ipynb, section "Vectorizing mapping"
(https://www.tensorflow.org/guide/data_performance#vectorizing_mapping): `fast_dataset =
tf.data.Dataset.range(10000)`, `increment(x) = x+1`, first "Scalar mapping"
(`fast_dataset.map(increment).batch(256)`), then "Vectorized mapping"
(`fast_dataset.batch(256).map(increment)`: "The tf.Tensor.__add__ method already handle batches").
The user's form is the guide's scalar mapping, the expert form its vectorized mapping; both as the
guide writes them.

Changed to run here: `repeat()` at the end of both (the guide iterates two epochs); the guide has no
training step, so the step is a small TensorFlow one (a tf.function fitting a 256x64 dense layer to
the batch with one SGD update), given to pipediag as `--step` (TensorFlow batches).

Expected answer and why (plain-TF measurements, benchmarks/real_truth.py, see MEASURED below):
- bottleneck `input`: one function call per scalar element (256 per batch) costs more than the
  step; the vectorized form makes one call per batch.
- stage `map(increment)`.
- right: `vectorize_map` (the guide's fix: batch first, then map); `cache` after the batch too:
  range and increment are deterministic and the whole result is 80 KB, so replaying it removes
  the per-element calls as well (this would be wrong for the issue's class 4, a map that draws
  random jitter per element; the guide's map draws none).
- wrong: step-side fixes.

MEASURED (2026-12-01, the shared 2-core machine, `flock /tmp/pipediag-cpu.lock python
benchmarks/real_truth.py scenarios/real/tf_guide_vectorize.py --seconds 3 --prefix-seconds 2
--repeats 2`; median (range) of the 2 runs, per second): free step 1171 (549-1793) steps; input
alone 91.5 (77.3-105.6) batches; fed 56.9 (15.8-97.9) steps; expert alone 5238 (3965-6511)
batches; expert fed 1361 (934-1787) steps. Input alone / free step = 0.08: input; the vectorized
map feeds 57x more batches. The stage: both forms read the same range, so the 43 us per element
that the scalar form adds is its 256 calls of `map(increment)` per batch. (The prefixes cannot
show it: pulling single elements from Python costs ~0.1 ms each, more than the map.)
"""

import os
import sys

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import STEP_FIXES, Expected  # noqa: E402

EXPECTED = Expected(
    bottleneck="input",
    stage="map(increment)",
    right_fixes=("vectorize_map", "cache"),
    wrong_fixes=STEP_FIXES,
)


def increment(x):
    return x+1


def make_dataset(batch_size=256):
    fast_dataset = tf.data.Dataset.range(10000)
    return fast_dataset.map(increment).batch(batch_size).repeat()


def expert_dataset(batch_size=256):
    fast_dataset = tf.data.Dataset.range(10000)
    # Apply function on a batch of items
    # The tf.Tensor.__add__ method already handle batches
    return fast_dataset.batch(batch_size).map(increment).repeat()


def make_step():
    """One SGD update of a 1->64->1 dense layer over the batch's values (a TensorFlow step)."""
    w1 = tf.Variable(tf.random.stateless_normal([1, 64], seed=[1, 2]) * 0.1)
    w2 = tf.Variable(tf.random.stateless_normal([64, 1], seed=[3, 4]) * 0.1)

    @tf.function
    def step(batch):
        x = tf.cast(tf.reshape(batch, [-1, 1]), tf.float32) / 10000.0
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.nn.relu(x @ w1) @ w2 - x))
        for var, grad in zip((w1, w2), tape.gradient(loss, (w1, w2))):
            var.assign_sub(0.01 * grad)
        return loss

    return step
