"""The tuned pipeline: the user's graph rewritten, measured safe, caches filled and bounded."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.modes.tuning import tune  # noqa: E402
from pipediag.modes.tuning_rules import TuningFacts  # noqa: E402

FACTS = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=False)


def noisy(x):
    return tf.cast(x, tf.float32) + tf.random.uniform([], maxval=0.0)  # a random op that adds nothing


def decode(x):
    return tf.cast(x, tf.float32) * 3.0


def applied(tuned):
    return [(c.kind, c.stage) for c in tuned.changes if c.applied]


def test_random_serial_map_becomes_parallel_and_keeps_order():
    ds = tf.data.Dataset.range(64).map(noisy).batch(8)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    assert ("parallel_map", "map(noisy)") in applied(tuned)
    stages = PipelineGraph.from_dataset(tuned.dataset).stages()
    assert [s.kind for s in stages] == ["source", "parallel_map", "batch", "prefetch", "options"]
    assert [b.tolist() for b in tuned.dataset.as_numpy_iterator()] == [b.tolist() for b in ds.as_numpy_iterator()]


def test_stateless_map_is_left_to_tensorflow():
    tuned = tune(tf.data.Dataset.range(8).map(decode).batch(4), FACTS, input_batches_per_sec=100)
    change = next(c for c in tuned.changes if c.kind == "parallel_map")
    assert not change.applied and "map_parallelization" in change.reason


def test_cache_goes_before_the_first_random_stage_and_is_filled():
    ds = tf.data.Dataset.range(64).map(decode).map(noisy).batch(8)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    cache = next(c for c in tuned.changes if c.kind == "cache")
    assert cache.applied and cache.stage == "map(decode)"
    assert cache.details["elements"] == 64 and cache.details["estimated_bytes"] == 64 * 4
    assert tuned.cache_fill_ns > 0
    kinds = [s.kind for s in PipelineGraph.from_dataset(tuned.dataset).stages()]
    assert kinds == ["source", "map", "cache", "parallel_map", "batch", "prefetch", "options"]
    assert [b.tolist() for b in tuned.dataset.as_numpy_iterator()] == [b.tolist() for b in ds.as_numpy_iterator()]


def test_cache_over_budget_is_left_out_with_a_snapshot_hint():
    ds = tf.data.Dataset.range(1000).map(decode).batch(8)
    small = TuningFacts(cores=2, ram_budget_bytes=100, fill_budget_seconds=10, latency_bound=False)
    cache = next(c for c in tune(ds, small, input_batches_per_sec=100).changes if c.kind == "cache")
    assert not cache.applied and "snapshot" in cache.reason


def test_cache_goes_before_a_repeat_the_canonical_place():
    ds = tf.data.Dataset.range(10).map(decode).repeat().batch(4)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    cache = next(c for c in tuned.changes if c.kind == "cache")
    assert cache.applied and cache.details["elements"] == 10
    kinds = [s.kind for s in PipelineGraph.from_dataset(tuned.dataset).stages()]
    assert kinds[:4] == ["source", "map", "cache", "repeat"]


def test_no_cache_after_an_endless_repeat():
    ds = tf.data.Dataset.range(10).repeat().map(decode).batch(4)
    assert [c for c in tune(ds, FACTS, input_batches_per_sec=100).changes if c.kind == "cache"] == []


def test_serial_interleave_becomes_parallel_with_the_same_order():
    ds = tf.data.Dataset.range(4).interleave(lambda i: tf.data.Dataset.range(i * 10, i * 10 + 3), cycle_length=2)
    tuned = tune(ds.batch(4), FACTS, input_batches_per_sec=100)
    assert ("interleave", "interleave(<lambda>)") in applied(tuned)
    assert [b.tolist() for b in tuned.dataset.as_numpy_iterator()] == [b.tolist() for b in ds.batch(4).as_numpy_iterator()]


def test_files_read_one_by_one_are_interleaved_only_when_shuffled(tmp_path):
    paths = []
    for i in range(4):
        path = str(tmp_path / f"part-{i}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for j in range(5):
                w.write(f"{i}-{j}".encode())
        paths.append(path)
    plain = tf.data.TFRecordDataset(paths).batch(5)
    change = next(c for c in tune(plain, FACTS, input_batches_per_sec=100).changes if c.kind == "interleave")
    assert not change.applied and "order" in change.reason

    shuffled = tf.data.TFRecordDataset(paths).shuffle(20).batch(5)
    tuned = tune(shuffled, FACTS, input_batches_per_sec=100)
    change = next(c for c in tuned.changes if c.kind == "interleave")
    assert change.applied and change.details["files"] == 4
    records = sorted(r for b in tuned.dataset.as_numpy_iterator() for r in b.tolist())
    assert records == sorted(f"{i}-{j}".encode() for i in range(4) for j in range(5))


def test_latency_bound_pipelines_get_a_bigger_threadpool():
    latency = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=True)
    tuned = tune(tf.data.Dataset.range(8).batch(4), latency, input_batches_per_sec=100)
    assert ("threading", None) in applied(tuned)
    assert tuned.dataset.options().threading.private_threadpool_size == 32


def test_pipeline_ending_in_prefetch_gets_no_second_one():
    tuned = tune(tf.data.Dataset.range(8).batch(4).prefetch(1), FACTS, input_batches_per_sec=100)
    prefetch = next(c for c in tuned.changes if c.kind == "prefetch")
    assert not prefetch.applied


def test_dataset_with_numpy_shaped_elements():
    ds = tf.data.Dataset.from_tensor_slices(np.zeros((16, 3), "float32")).map(noisy).batch(4)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    assert next(iter(tuned.dataset)).shape == (4, 3)
