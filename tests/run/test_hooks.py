"""The hooks on tf.distribute: a custom loop over `strategy.experimental_distribute_dataset` and
over `distribute_datasets_from_function`, with MirroredStrategy on 2 logical CPUs (set before
TensorFlow starts, so in a subprocess), each step a tf.function run on both replicas."""

import json
import os

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


# The hand-over timed inside `pipediag run` on the mirrored loop, in a process of its own (the
# logical CPUs are set before TensorFlow starts): each ready batch handed over is watched where the
# distributed feed yields it.
WATCH_THE_HAND_OVER = """
import json, sys
from pipediag.backends.tf import tf
from pipediag.modes import distributed, handover
from tests.run.scripts import run_here

repeated, seen = [], []
made = handover.repeated_batch

def tagged(batch):
    repeated.append(made(batch))
    return repeated[-1]

class Watched(distributed.DistributedFeed):
    def __call__(self):
        batch = super().__call__()
        if any(self.dataset is r for r in repeated):
            seen.append(len(self.strategy.experimental_local_results(batch[0] if isinstance(batch, tuple) else batch)))
        return batch

handover.repeated_batch = tagged
distributed.DistributedFeed = Watched
import pipediag.run.observe as observe
observe.DistributedFeed = Watched
result = run_here(sys.argv[1], modes=("synthetic", "pipeline", "input_only"))
h = result.diagnosis.handover
notes = [n for n in result.diagnosis.notes if "input_only window and the hand-over were read through" in n]
cost = [n for n in result.diagnosis.notes if "through a plain tf.data iterator" in n]
print(json.dumps({"through": h and h.through, "batches": h and h.batches, "seen": seen, "notes": notes,
                  "cost": cost, "plain": h and h.plain_batches_per_sec, "plain_ci": h and h.plain_batches_per_sec_ci}))
"""


@pytest.mark.slow
def test_the_hand_over_of_a_mirrored_loop_is_timed_through_its_distributed_iterator(tmp_path):
    import subprocess
    import sys

    from tests.run.scripts import ROOT

    path = write(tmp_path, "mirrored.py", MIRRORED.replace(
        "{make}", "dist = strategy.experimental_distribute_dataset(make_dataset())"))
    p = subprocess.run([sys.executable, "-c", WATCH_THE_HAND_OVER, path], capture_output=True, text=True,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert "strategy.experimental_distribute_dataset (MirroredStrategy, 2 replica(s))" in got["through"]
    # every timed hand-over (and its warm-up) was a batch split over the 2 replicas by that iterator
    assert got["batches"] and len(got["seen"]) >= got["batches"] and set(got["seen"]) == {2}
    assert len(got["notes"]) == 1 and "MirroredStrategy, 2 replica(s)" in got["notes"][0]
    # and the pipeline alone once more through a plain iterator: what the distributed one adds to a batch
    assert len(got["cost"]) == 1 and "batches/s through the distributed iterator of" in got["cost"][0], got["cost"]
    # ... and the hand-over record keeps that plain read for the verdict's hand-over edge
    assert got["plain"] and f"{got['plain']:.0f} through a plain tf.data iterator" in got["cost"][0]
    assert got["plain_ci"][0] <= got["plain"] <= got["plain_ci"][1]
