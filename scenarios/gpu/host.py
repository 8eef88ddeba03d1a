"""Host-bound: a step that dispatches ~400 tiny JAX operations one by one (no jit).

Each operation is a separate dispatch from Python (tens of microseconds) for a kernel of a few
microseconds on 64x64 arrays, so even with free input the GPU is idle most of the time.
Expected: host (NVML utilization < 50% in synthetic mode). The step takes several milliseconds:
handing over a NumPy batch costs the training loop ~0.2-0.4 ms (measured on the 2-core
development machine), so the step must be long enough that this stays under the 5% wait that
would call the input moderately limiting.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import vectors  # noqa: E402

FEATURES = 64
OPS = 200  # loop iterations; each is a matmul and a tanh: two dispatches


def make_dataset(batch_size=64):
    return vectors(batch_size, FEATURES)


def make_step():
    import jax.numpy as jnp

    w = jnp.eye(FEATURES, dtype=jnp.float32) * 0.5

    def step(batch):
        x = jnp.asarray(batch[0])
        for _ in range(OPS):
            x = jnp.tanh(x @ w)
        return x.sum()

    return step
