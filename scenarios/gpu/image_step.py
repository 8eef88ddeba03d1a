"""A JAX image-classifier training step on the GPU, for the built-in demo pipeline
(`pipediag.demo:make_dataset`: JPEG decode and augmentation on the CPU, 64x64x3 images).

Not a verdict scenario: it gives `pipediag scale` and `pipediag compare` a real accelerator step
to feed with a CPU-heavy pure-TensorFlow pipeline (service workers cannot run `tf.py_function`):

    python -m pipediag scale pipediag.demo:make_dataset --step scenarios/gpu/image_step.py:make_step \
        --batch-format numpy --workers 1,2,4,8 --accelerators 1,8
"""

WIDTH = 1024
CLASSES = 10


def make_step():
    import jax
    import jax.numpy as jnp

    key = jax.random.key(0)
    k1, k2 = jax.random.split(key)
    params = {"w1": jax.random.normal(k1, (64 * 64 * 3, WIDTH), jnp.float32) * 0.01,
              "w2": jax.random.normal(k2, (WIDTH, CLASSES), jnp.float32) * 0.01}

    def loss_fn(p, x, y):
        h = jax.nn.relu(x.reshape(x.shape[0], -1) @ p["w1"])
        logits = h @ p["w2"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def update(p, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree.map(lambda a, g: a - 0.01 * g, p, grads), loss

    state = {"params": params}

    def step(batch):
        x, y = batch
        state["params"], loss = update(state["params"], jnp.asarray(x), jnp.asarray(y, jnp.int32))
        return loss

    return step
