"""For `pipediag sweep`: a bfloat16 MLP training step (two 4096 -> 16384 -> 4096 blocks).

At small batches the step is per-step overhead (throughput grows with the batch); at large ones
the tensor cores are saturated (it stops growing: the knee). Activations grow with the batch
(~160 KB per example, estimated), so under `--gpu-memory-limit 3072` the larger sizes (16384 or
65536) run out of memory: the OOM edge. Inputs are 64 floats per example, so tf.data keeps up.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import vectors  # noqa: E402

FEATURES = 64
WIDTH = 4096
HIDDEN = 16384
BLOCKS = 2


def make_dataset(batch_size=256):
    return vectors(batch_size, FEATURES, examples=65536)


def make_step():
    import jax
    import jax.numpy as jnp

    keys = iter(jax.random.split(jax.random.key(0), 2 * BLOCKS + 1))

    def init(shape):
        return (jax.random.normal(next(keys), shape) / shape[0] ** 0.5).astype(jnp.bfloat16)

    params = {"w_in": init((FEATURES, WIDTH)), "blocks": [(init((WIDTH, HIDDEN)), init((HIDDEN, WIDTH)))
                                                          for _ in range(BLOCKS)]}

    def loss_fn(p, x):
        h = x.astype(jnp.bfloat16) @ p["w_in"]
        for up, down in p["blocks"]:
            h = h + jax.nn.gelu(h @ up) @ down
        return jnp.mean(jnp.square(h.astype(jnp.float32)))

    def update(p, x):
        loss, grads = jax.value_and_grad(loss_fn)(p, x)
        return jax.tree.map(lambda a, g: a - (1e-4 * g).astype(a.dtype), p, grads), loss

    update = jax.jit(update, donate_argnums=0)

    def step(batch):
        nonlocal params
        params, loss = update(params, jnp.asarray(batch[0]))
        return loss

    return step
