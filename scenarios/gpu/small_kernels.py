"""Busy but barely working: a step of 8 calls of one jitted function of 256 dependent tiny
matmuls (16x256 @ 256x256): 2048 small kernels per step.

XLA launches each call's kernels back to back (as CUDA graphs where it uses command buffers),
and the 8 calls queue up behind each other (JAX dispatches asynchronously), so NVML calls the
GPU busy most of the time; yet each kernel covers a handful of the H200's 132 SMs. GPM's SM
activity shows how little of the chip works. Expected answer and why: host — by the GPM rule (busy, but under
25% of SMs active while busy) when launches keep the GPU busy, or by NVML utilization (< 50%)
if host-side launch gaps leave it idle. The report's evidence says which. Eight calls rather
than one make the step several milliseconds long, so handing over a batch (~0.2-0.4 ms on the
development machine) stays under the 5% wait that would call the input moderately limiting.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected, vectors  # noqa: E402

BATCH_FORMAT = "numpy"  # the JAX step takes NumPy batches (--batch-format numpy)
EXPECTED = Expected(bottleneck="host", stage=None, right_fixes=('batch_size', 'xla'), wrong_fixes=INPUT_FIXES)

FEATURES = 256
LAYERS = 256
CALLS = 8


def make_dataset(batch_size=16):
    return vectors(batch_size, FEATURES)


def expert_dataset(batch_size=16):
    """The input is in memory and prefetched already: an expert changes the step (larger batches,
    fused kernels), not the pipeline."""
    return make_dataset(batch_size)


def make_step():
    import jax
    import jax.numpy as jnp

    w = jax.random.normal(jax.random.key(0), (FEATURES, FEATURES), jnp.float32) / FEATURES**0.5

    @jax.jit
    def forward(x, w):
        for _ in range(LAYERS):  # unrolled: 256 dependent kernels in one executable
            x = jnp.tanh(x @ w)
        return x

    def step(batch):
        x = jnp.asarray(batch[0])
        for _ in range(CALLS):
            x = forward(x, w)
        return x.sum()

    return step
