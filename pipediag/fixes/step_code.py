"""Code for the fixes to the training step itself, written for its framework (jax, torch, else TensorFlow/Keras)."""

from __future__ import annotations

STEP_KINDS = ("tf_function", "mixed_precision", "xla", "gradient_accumulation", "allocator", "steps_per_call",
              "device_prefetch")


def step_code(kind: str, framework: str | None) -> str:
    """The change to the training step, written for its framework (jax, torch, else TensorFlow/Keras)."""
    if kind == "tf_function":
        return (
            "@tf.function  # traced once: later calls run a graph, not op by op\n"
            "def train_step(x, y):\n"
            "    with tf.GradientTape() as tape:\n"
            "        loss = loss_fn(y, model(x, training=True))\n"
            "    grads = tape.gradient(loss, model.trainable_variables)\n"
            "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
            "    return loss\n"
            "# keep .numpy() and print() out of it; jit_compile=True adds XLA\n"
            "# Keras fit: leave out run_eagerly=True"
        )
    if kind == "mixed_precision":
        if framework == "jax":
            return (
                "compute = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)  # bfloat16 compute copy\n"
                "loss, grads = jax.value_and_grad(loss_fn)(compute, batch)      # keep float32 params for the update"
            )
        if framework == "torch":
            return (
                "with torch.autocast('cuda', dtype=torch.bfloat16):\n"
                "    loss = loss_fn(model(x), y)\n"
                "loss.backward()"
            )
        return "keras.mixed_precision.set_global_policy('mixed_bfloat16')  # before building the model"
    if kind == "xla":
        if framework == "jax":
            return "step = jax.jit(step, donate_argnums=0)  # the whole update in one jit; donate the old params"
        if framework == "torch":
            return "model = torch.compile(model)  # or mode='reduce-overhead' for CUDA graphs on small steps"
        return "model.compile(..., jit_compile=True)  # or @tf.function(jit_compile=True)"
    if kind == "gradient_accumulation":
        if framework == "jax":
            return "optimizer = optax.MultiSteps(optimizer, every_k_schedule=2)  # batch B/2, update every 2 steps"
        if framework == "torch":
            return (
                "(loss_fn(model(x), y) / 2).backward()  # batch B/2\n"
                "if step % 2 == 1:\n"
                "    optimizer.step(); optimizer.zero_grad()"
            )
        return "optimizer = keras.optimizers.AdamW(learning_rate, gradient_accumulation_steps=2)  # with batch B/2"
    if kind == "allocator":
        if framework == "torch":
            return "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py  # set before CUDA starts"
        return "XLA_PYTHON_CLIENT_MEM_FRACTION=.95 python train.py  # set before JAX starts; default .75"
    if kind == "steps_per_call":
        if framework == "jax":
            return (
                "ds = ds.batch(8, drop_remainder=True)  # 8 batches per hand-over: arrays [8, B, ...]\n"
                "@jax.jit\n"
                "def steps(state, batches):\n"
                "    return jax.lax.scan(train_step, state, batches)  # 8 updates in one call"
            )
        if framework == "torch":
            return (
                "ds = ds.batch(8, drop_remainder=True)  # 8 batches per hand-over: one copy to the GPU\n"
                "xs = torch.as_tensor(batches).cuda()\n"
                "for x in xs: train_step(x)  # the loop runs on device data"
            )
        return "model.compile(..., steps_per_execution=8)  # Keras runs 8 batches per compiled call"
    # device_prefetch
    if framework == "jax":
        return (
            "from flax.jax_utils import prefetch_to_device  # or a thread that calls jax.device_put\n"
            "batches = prefetch_to_device(ds.as_numpy_iterator(), size=2)  # next batch copied while the step runs"
        )
    if framework == "torch":
        return "x = torch.from_numpy(x).pin_memory().to('cuda', non_blocking=True)  # the copy overlaps the step"
    return "ds = ds.apply(tf.data.experimental.prefetch_to_device('/gpu:0'))  # last line of the pipeline"
