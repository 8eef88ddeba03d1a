"""Host-bound at the hand-over: a jitted JAX MLP training step on batches of 8, fed from memory by
`from_tensor_slices(x).batch(8).repeat().prefetch(AUTOTUNE)` (issue 14, item 1).

On the H200 the step took ~0.2 ms (3,800-5,000 steps/s with free input, NVML busy ~3%) and the
input alone ran 13,000-16,600 batches/s, 3.3x the free step. Handing each batch over (get_next,
the NumPy view, `jax.device_put`) costs about a quarter to a third of the step, and it shows as
waiting for input although no pipeline change can remove it: pipediag called it "input (high)"
and offered `cache` x1.16 for data already in memory.
Expected answer and why: host (the step's wait is the hand-over: the pipeline alone keeps up,
the wait is within 2x an already-produced batch's hand-over, and >= 20% of the time; the GPU idles
even with free input). Fixes: more work per hand-over (bigger batches, several batches per
compiled call) or hiding it (device prefetch); never `cache` (the data is in memory already).
"""

import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected  # noqa: E402

BATCH_FORMAT = "numpy"  # the JAX step takes NumPy batches (--batch-format numpy)
EXPECTED = Expected(bottleneck="host", stage=None, right_fixes=("batch_size", "steps_per_call", "device_prefetch"),
                    wrong_fixes=INPUT_FIXES)

FEATURES = 32
HIDDEN = 64
EXAMPLES = 8192


def make_dataset(batch_size=8):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(EXAMPLES, FEATURES)).astype("float32")
    y = (np.arange(EXAMPLES) % 10).astype("int32")
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size).repeat().prefetch(tf.data.AUTOTUNE)


def expert_dataset(batch_size=8):
    """The pipeline is already as fast as it gets: an expert changes the training loop (bigger
    batches, several batches per jitted call, the next batch copied to the device while the step
    runs), not the pipeline."""
    return make_dataset(batch_size)


def make_step():
    import jax
    import jax.numpy as jnp

    k1, k2 = jax.random.split(jax.random.key(0))
    params = {"w1": jax.random.normal(k1, (FEATURES, HIDDEN)) / FEATURES**0.5,
              "w2": jax.random.normal(k2, (HIDDEN, 10)) / HIDDEN**0.5}

    def loss_fn(p, x, y):
        logits = jnp.tanh(x @ p["w1"]) @ p["w2"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def update(p, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree.map(lambda a, g: a - 1e-2 * g, p, grads), loss

    update = jax.jit(update, donate_argnums=0)

    def step(batch):
        nonlocal params
        x, y = batch
        params, loss = update(params, jax.device_put(x), jax.device_put(y))
        return loss

    return step
