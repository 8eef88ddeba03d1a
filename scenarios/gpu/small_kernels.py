"""Busy but barely working: a step of 8 calls of one jitted function of 256 dependent tiny
matmuls (16x256 @ 256x256): 2048 small kernels per step.

XLA launches each call's kernels back to back (as CUDA graphs where it uses command buffers),
and the 8 calls queue up behind each other (JAX dispatches asynchronously), so NVML calls the
GPU busy most of the time; yet each kernel covers a handful of the H200's 132 SMs. GPM's SM
activity shows how little of the chip works. Expected: host — by the GPM rule (busy, but under
25% of SMs active while busy) when launches keep the GPU busy, or by NVML utilization (< 50%)
if host-side launch gaps leave it idle. The report's evidence says which. Eight calls rather
than one make the step several milliseconds long, so handing over a batch (~0.2-0.4 ms on the
development machine) stays under the 5% wait that would call the input moderately limiting.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import vectors  # noqa: E402

FEATURES = 256
LAYERS = 256
CALLS = 8


def make_dataset(batch_size=16):
    return vectors(batch_size, FEATURES)


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
