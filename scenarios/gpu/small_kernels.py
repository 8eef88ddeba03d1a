"""Busy but barely working: one jitted step of 256 dependent tiny matmuls (16x256 @ 256x256).

XLA launches them back to back (as CUDA graphs where it uses command buffers), so NVML calls the
GPU busy most of the time; yet each kernel covers a handful of the H200's 132 SMs. GPM's SM
activity shows how little of the chip works. Expected: host — by the GPM rule (busy, but under
25% of SMs active while busy) when launches keep the GPU busy, or by NVML utilization (< 50%)
if host-side launch gaps leave it idle. The report's evidence says which.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import vectors  # noqa: E402

FEATURES = 256
LAYERS = 256


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
        return x.sum()

    def step(batch):
        return forward(jnp.asarray(batch[0]), w)

    return step
