"""Compute-bound: a bfloat16 MLP training step (forward, gradients, SGD) of ~13 TFLOP.

The batch is small on the wire (256 x 1024 float32, 1 MiB) and expanded on the GPU to 4096 rows
of 8192-wide layers, so tf.data hands over a batch in microseconds while the step takes tens of
milliseconds of tensor-core matmuls. Expected answer and why: compute (NVML busy ~100%; GPM tensor cores busy).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected, vectors  # noqa: E402

BATCH_FORMAT = "numpy"  # the JAX step takes NumPy batches (--batch-format numpy)
EXPECTED = Expected(bottleneck="compute", stage=None, right_fixes=('mixed_precision', 'xla'), wrong_fixes=INPUT_FIXES)

FEATURES = 1024
WIDTH = 8192
LAYERS = 8
EXPAND = 16  # rows of work per example on the GPU


def make_dataset(batch_size=256):
    return vectors(batch_size, FEATURES)


def expert_dataset(batch_size=256):
    """The input is in memory and prefetched already: the step is the limit, nothing to change here."""
    return make_dataset(batch_size)


def make_step():
    import jax
    import jax.numpy as jnp

    keys = jax.random.split(jax.random.key(0), LAYERS + 1)
    params = {
        "w_in": (jax.random.normal(keys[0], (FEATURES, WIDTH)) / FEATURES**0.5).astype(jnp.bfloat16),
        "layers": [(jax.random.normal(k, (WIDTH, WIDTH)) / WIDTH**0.5).astype(jnp.bfloat16) for k in keys[1:]],
    }

    def loss_fn(p, x):
        h = jnp.tile(x.astype(jnp.bfloat16) @ p["w_in"], (EXPAND, 1))
        for w in p["layers"]:
            h = jax.nn.gelu(h @ w)
        return jnp.mean(jnp.square(h.astype(jnp.float32)))

    def update(p, x):
        loss, grads = jax.value_and_grad(loss_fn)(p, x)
        return jax.tree.map(lambda a, g: a - (1e-3 * g).astype(a.dtype), p, grads), loss

    update = jax.jit(update, donate_argnums=0)

    def step(batch):
        nonlocal params
        params, loss = update(params, jnp.asarray(batch[0]))
        return loss

    return step
