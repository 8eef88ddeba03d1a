"""The hooks on tf.distribute: a custom loop over `strategy.experimental_distribute_dataset` and
over `distribute_datasets_from_function`, with MirroredStrategy on 2 logical CPUs (set before
TensorFlow starts, so in a subprocess), each step a tf.function run on both replicas."""

import json

import pytest

from tests.run.scripts import assert_windows_ran, run_command, write

MIRRORED = """
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

def make_dataset(batch_size=8):
    return tf.data.Dataset.range(100000).map(lambda i: tf.cast(tf.fill([4], i), tf.float32)).batch(batch_size)

with strategy.scope():
    w = tf.Variable(tf.ones([4, 1]))

@tf.function
def train_step(batch):
    def replica(x):
        return tf.reduce_sum(tf.matmul(x, w))
    return strategy.reduce("SUM", strategy.run(replica, args=(batch,)), axis=None)

{make}
for step, batch in enumerate(dist):
    parts = strategy.experimental_local_results(batch)
    assert len(parts) == 2 and all(p.shape[1:] == (4,) for p in parts), parts
    train_step(batch)
"""


@pytest.mark.parametrize("make, kind", [
    ("dist = strategy.experimental_distribute_dataset(make_dataset())", "distributed"),
    ("dist = strategy.distribute_datasets_from_function(lambda ctx: make_dataset(4))", "from_function"),
])
@pytest.mark.slow
def test_a_mirrored_custom_loop_is_observed_and_swapped_per_replica(tmp_path, make, kind):
    path = write(tmp_path, "mirrored.py", MIRRORED.replace("{make}", make))
    out = tmp_path / "m.json"
    p = run_command("--quiet", "--observe-steps", "10", "--window-seconds", "0.5", "--no-anatomy",
                    "--json", str(out), path)
    assert p.returncode == 0, p.stderr[-3000:]
    saved = json.loads(out.read_text())
    assert saved["settings"]["hook"] == kind
    assert saved["settings"]["dataset_site"]["function"] == "make_dataset"
    assert_windows_ran(saved)
