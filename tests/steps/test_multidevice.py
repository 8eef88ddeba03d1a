"""Steps on several devices, built here without GPUs: JAX over 8 forced host devices, TensorFlow
over logical CPU devices with MirroredStrategy. Each runs in its own process, because the device
count must be set before the framework starts. The assertions are about structure (devices seen,
feeds that work, the feeding line), never about which side is faster."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

COMMON = """
import json
from pipediag.api import diagnose as api
from pipediag.records.run import StopRule
RULE = StopRule(max_seconds=1.0, min_seconds=0.3, min_steps=5, warmup_steps=2)

def report(d, **extra):
    print(json.dumps(dict(
        status=d.status, devices=list(d.step.devices), description=d.step.description,
        steps={m.name: m.steps for m in d.modes.values()},
        feeding=[e for e in d.verdict.evidence if e.startswith("the step ran on")],
        facts={k: d.verdict.facts.get(k) for k in ("devices", "devices_fed")}, **extra)))
"""


def run_script(body: str, env_extra: dict | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, **(env_extra or {}))
    script = COMMON + textwrap.dedent(body)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_jax_step_over_a_mesh_of_eight_host_devices():
    pytest.importorskip("jax")
    out = run_script("""
        import jax, jax.numpy as jnp, numpy as np
        import tensorflow as tf
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        mesh = Mesh(np.array(jax.devices()), ("data",))
        rows = NamedSharding(mesh, P("data"))
        state = {"w": jax.device_put(jnp.zeros((8, 1)), NamedSharding(mesh, P()))}

        @jax.jit
        def train(w, x, y):
            loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
            return w - 0.01 * g, loss

        def step(batch):  # the global batch, sharded by rows over the mesh
            x, y = (jax.device_put(a, rows) for a in batch)
            state["w"], loss = train(state["w"], x, y)
            return loss

        def data():
            return tf.data.Dataset.range(10**6).map(lambda i: (tf.ones([8]), tf.ones([1]))).batch(64)

        d = api.diagnose(data, step=step, batch_format="numpy", modes=("synthetic", "pipeline", "input_only"),
                         anatomy=False, stop_rule=RULE)
        report(d)
    """, {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"})
    assert out["status"] == "complete"
    assert out["devices"] == [f"cpu:{k}" for k in range(8)]
    assert all(n > 0 for n in out["steps"].values())
    [line] = out["feeding"]
    assert line.startswith("the step ran on 8 devices (cpu:0–cpu:7): with free input they take ")
    assert out["facts"]["devices"] == 8 and out["facts"]["devices_fed"] > 0


def test_tensorflow_mirrored_strategy_a_step_and_a_keras_model_fed_per_replica():
    pytest.importorskip("tensorflow")
    out = run_script("""
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        import keras
        from pipediag.modes.distributed import DistributedFeed, distributed_constant
        from pipediag.steps.distributed import split_batch
        from pipediag.modes.feeds import same_batch

        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

        def data():
            return tf.data.Dataset.range(10**6).map(
                lambda i: (tf.ones([8]) * tf.cast(i % 3, tf.float32), tf.ones([1]))).batch(32)

        # the feeds: per-replica batches, the first ones kept whole; an uneven plain batch split 3 + 2
        feed = DistributedFeed(data(), strategy)
        first = feed()
        plain = next(iter(data()))
        sizes = [int(t.shape[0]) for t in strategy.experimental_local_results(
            split_batch((tf.ones([5, 2]),), strategy)[0])]
        constant = distributed_constant(plain, strategy)
        replicas = len(strategy.experimental_local_results(constant()[0]))
        whole = same_batch(feed.firsts[0], plain)

        with strategy.scope():
            w = tf.Variable(tf.zeros([8, 1]))

        @tf.function
        def replica_step(batch):
            x, y = batch
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((x @ w - y) ** 2)
            grad = tf.distribute.get_replica_context().all_reduce("mean", tape.gradient(loss, w))
            w.assign_sub(0.01 * grad)
            return loss

        def step(batch):
            return strategy.run(replica_step, args=(batch,))
        step.distribute_strategy = strategy

        d = api.diagnose(data, step=step, modes=("synthetic", "pipeline", "input_only"), anatomy=False,
                         stop_rule=RULE)
        custom = dict(devices=list(d.step.devices), steps={m.name: m.steps for m in d.modes.values()},
                      feeding=[e for e in d.verdict.evidence if e.startswith("the step ran on")])

        with strategy.scope():
            model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(1)])
            model.compile(keras.optimizers.SGD(0.001), "mse")
        d = api.diagnose(data, model=model, modes=("synthetic", "pipeline"), anatomy=False, stop_rule=RULE)
        report(d, custom=custom, sizes=sizes, replicas=replicas, whole=whole)
    """)
    assert out["sizes"] == [3, 2] and out["replicas"] == 2 and out["whole"]
    custom = out["custom"]
    assert custom["devices"] == ["cpu:0", "cpu:1"] and all(n > 0 for n in custom["steps"].values())
    assert custom["feeding"] and custom["feeding"][0].startswith("the step ran on 2 devices (cpu:0 and cpu:1)")
    assert out["status"] == "complete" and out["devices"] == ["cpu:0", "cpu:1"]  # the Keras model's replicas
    assert set(out["steps"]) == {"synthetic", "pipeline"} and all(n > 0 for n in out["steps"].values())
    assert out["feeding"]  # without input_only: what the two devices take, not how many are fed
