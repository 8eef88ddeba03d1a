"""Host-bound: a step that dispatches ~400 tiny JAX operations one by one (no jit).

Each operation is a separate dispatch from Python (tens of microseconds) for a kernel of a few
microseconds on 64x64 arrays, so even with free input the GPU is idle most of the time.
Expected answer and why: host (NVML utilization < 50% in synthetic mode). The step takes several milliseconds:
handing over a NumPy batch costs the training loop ~0.2-0.4 ms (measured on the 2-core
development machine), so the step must be long enough that this stays under the 5% wait that
would call the input moderately limiting.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected, vectors  # noqa: E402

BATCH_FORMAT = "numpy"  # the JAX step takes NumPy batches (--batch-format numpy)
EXPECTED = Expected(bottleneck="host", stage=None, right_fixes=('batch_size', 'xla'), wrong_fixes=INPUT_FIXES)

FEATURES = 64
OPS = 200  # loop iterations; each is a matmul and a tanh: two dispatches


def make_dataset(batch_size=64):
    return vectors(batch_size, FEATURES)


def expert_dataset(batch_size=64):
    """The input is in memory and prefetched already: an expert changes the step (jit it, or fewer,
    larger operations), not the pipeline."""
    return make_dataset(batch_size)


def make_step():
    import jax.numpy as jnp

    w = jnp.eye(FEATURES, dtype=jnp.float32) * 0.5

    def step(batch):
        x = jnp.asarray(batch[0])
        for _ in range(OPS):
            x = jnp.tanh(x @ w)
        return x.sum()

    return step
