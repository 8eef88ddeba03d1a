"""Data parallel over every visible GPU: tf.data on the TensorFlow CPU build feeding a JAX step whose
global batch is sharded by rows over a one-axis mesh of all local devices (`jax.devices()`).

Built for issue 18's multi-GPU validation run (docs/gpu-validation.md, "Multi-GPU run"): the
pipeline delivers a fixed number of global batches per second (a serial `tf.py_function` map that
sleeps DELAY_MS per batch, ~1000/DELAY_MS batches/s at most), while the step's appetite grows with
the number of devices (each device takes 1/N of every batch: a bfloat16 MLP of ~4 TFLOP per global
batch, ~10 ms on one H200). So one GPU is compute-bound, and on 2 to 4 it starves: what pipediag
should say, with "the step ran on N devices (gpu:0–gpu:N-1)" and how many of them the pipeline
keeps fed, and per-GPU readings with no idle GPU and no straggler (the shards are even).

MESH_DEVICES=k builds the mesh over the first k devices only: with more GPUs visible, the others are
given to the job and never used (what the "idle" evidence line is for).

Not in `benchmarks/accuracy.py --gpu` (a folder of its own): its expected verdict depends on the
number of GPUs. MESH_SMOKE=1 makes it small enough for the CPU with
XLA_FLAGS=--xla_force_host_platform_device_count=4 (a check that it runs, not a measurement).
"""

import os
import time

import numpy as np
import tensorflow as tf

BATCH_FORMAT = "numpy"
SMOKE = os.environ.get("MESH_SMOKE") == "1"
FEATURES = 64 if SMOKE else 1024
WIDTH = 128 if SMOKE else 4096
LAYERS = 2 if SMOKE else 10
EXPAND = 1 if SMOKE else 16  # rows of work per example on the devices
DELAY_MS = 1.0 if SMOKE else 5.0  # per global batch, serial: the pipeline's ceiling
MESH_DEVICES = int(os.environ.get("MESH_DEVICES", "0"))  # 0: every local device


def make_dataset(batch_size=256):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, FEATURES)).astype("float32")

    def slow(batch):  # stands for per-batch host work that does not get faster with more GPUs
        time.sleep(DELAY_MS / 1000)
        return batch

    ds = tf.data.Dataset.from_tensor_slices(x).repeat().batch(batch_size, drop_remainder=True)
    ds = ds.map(lambda b: tf.ensure_shape(tf.py_function(slow, [b], tf.float32), [batch_size, FEATURES]))
    return ds.map(lambda b: (b,)).prefetch(2)


def make_step():
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax.devices()[:MESH_DEVICES] if MESH_DEVICES else jax.devices()
    mesh = Mesh(np.array(devices), ("data",))
    rows, replicated = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    keys = jax.random.split(jax.random.key(0), LAYERS + 1)
    params = jax.device_put({
        "w_in": (jax.random.normal(keys[0], (FEATURES, WIDTH)) / FEATURES**0.5).astype(jnp.bfloat16),
        "layers": [(jax.random.normal(k, (WIDTH, WIDTH)) / WIDTH**0.5).astype(jnp.bfloat16) for k in keys[1:]],
    }, replicated)

    def loss_fn(p, x):
        h = jnp.repeat(x.astype(jnp.bfloat16) @ p["w_in"], EXPAND, axis=0)  # stays sharded by rows
        for w in p["layers"]:
            h = jax.nn.gelu(h @ w)
        return jnp.mean(jnp.square(h.astype(jnp.float32)))

    def update(p, x):  # gradients of replicated weights over row-sharded data: XLA all-reduces them
        loss, grads = jax.value_and_grad(loss_fn)(p, x)
        return jax.tree.map(lambda a, g: a - (1e-3 * g).astype(a.dtype), p, grads), loss

    update = jax.jit(update, donate_argnums=0, out_shardings=(replicated, replicated))

    def step(batch):
        nonlocal params
        x = jax.device_put(batch[0], rows)  # the global batch, one slice of rows per device
        params, loss = update(params, x)
        return loss  # replicated on every device of the mesh: pipediag sees N devices

    return step
