"""A pipeline that caches: diagnose times its cached epochs, after one full pass in warm-up."""

import time

import pytest

import pipediag
from pipediag.backends.tf import tf
from tests.fixtures import pipelines as P

pytestmark = pytest.mark.slow


def slow_then_cached():
    """640 elements read at ~1 ms each (serial), cached, shuffled, in batches of 8: the first pass
    (80 batches) costs ~8 ms a batch; every pass after it reads from memory."""
    def read(x):
        time.sleep(0.001)
        return x

    ds = tf.data.Dataset.range(640).map(lambda x: tf.py_function(read, [x], tf.int64))
    ds = ds.map(lambda x: (tf.cast(tf.fill([16], x), tf.float32), x))
    return ds.cache().shuffle(64).batch(8).repeat()


def test_a_pipeline_that_caches_is_timed_after_its_first_pass(quick_rule):
    d = pipediag.diagnose(slow_then_cached, step=P.light_step(), stop_rule=quick_rule, modes=("synthetic", "pipeline",
                                                                                             "input_only"))
    note = next(n for n in d.notes if n.startswith("your pipeline caches (cache"))
    assert "warmed up over its first pass (80 batches" in note, d.notes
    assert d.modes["pipeline"].warmup_steps >= 80
    # Read from memory, 8 small elements a batch: thousands of batches/s here, where the first
    # pass gave at most 125 (8 sleeps of 1 ms); a slowed neighbour cannot close a 10x gap.
    assert d.modes["input_only"].batches_per_sec > 500, d.modes["input_only"]
