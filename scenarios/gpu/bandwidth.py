"""Memory-bandwidth-bound: each step streams a 1 GiB float32 state through DRAM 16 times.

Each of 16 rounds reduces the state (a full read) and updates it element-wise (a read and a
write), with one multiply-add per element: 32-48 GiB of DRAM traffic per step (XLA may fuse a
round's reduction with the previous update) and almost no arithmetic: ~10 ms at H200 bandwidth.
Expected answer and why: compute, memory-bandwidth-bound (GPM: DRAM bandwidth high, tensor/FP pipes
low), with mixed precision and fusion as the fixes.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected, vectors  # noqa: E402

BATCH_FORMAT = "numpy"  # the JAX step takes NumPy batches (--batch-format numpy)
EXPECTED = Expected(bottleneck="compute", stage=None, right_fixes=('mixed_precision', 'xla'), wrong_fixes=INPUT_FIXES)

FEATURES = 64
STATE = 2**28  # float32 elements: 1 GiB
ROUNDS = 16


def make_dataset(batch_size=64):
    return vectors(batch_size, FEATURES)


def expert_dataset(batch_size=64):
    """The input is in memory and prefetched already: the step is the limit, nothing to change here."""
    return make_dataset(batch_size)


def make_step():
    import jax
    import jax.numpy as jnp

    state = jnp.zeros((STATE,), jnp.float32)

    def rounds(x, shift):
        for _ in range(ROUNDS):  # the mean must finish before the update: no fusing across rounds
            x = x * 0.999 + (shift - jnp.mean(x)) * 1e-3
        return x

    update = jax.jit(rounds, donate_argnums=0)

    def step(batch):
        nonlocal state
        state = update(state, jnp.asarray(batch[0]).mean())
        return state[:1]

    return step
