"""Out of memory: a step whose intermediate needs 2 GiB per example — 256 GiB at batch 128,
beyond the H200's 141 GiB however JAX allocates.

The jitted function's output is the (batch, 2**29) float32 array itself, so XLA must allocate it:
JAX raises RESOURCE_EXHAUSTED on the first step. Expected answer and why: memory (high confidence), with smaller
batch, gradient accumulation, mixed precision and JAX's memory fraction as fixes.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected, vectors  # noqa: E402

BATCH_FORMAT = "numpy"  # the JAX step takes NumPy batches (--batch-format numpy)
EXPECTED = Expected(bottleneck="memory", stage=None, right_fixes=('batch_size', 'gradient_accumulation'), wrong_fixes=INPUT_FIXES)

FEATURES = 64
PER_EXAMPLE = 2**29  # float32 elements: 2 GiB


def make_dataset(batch_size=128):
    return vectors(batch_size, FEATURES, examples=1024)


def expert_dataset(batch_size=16):
    """An expert lowers the batch until the step fits (16 × 2 GiB = 32 GiB of the H200's 141 GiB),
    and accumulates gradients to keep the effective batch."""
    return make_dataset(batch_size)


def make_step():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def expand(x):
        return jnp.zeros((x.shape[0], PER_EXAMPLE), jnp.float32) + x[:, :1]

    def step(batch):
        big = expand(jnp.asarray(batch[0]))
        return big[:, 0].sum()

    return step
