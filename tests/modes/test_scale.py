"""The pipeline through a real local tf.data service: what reaches the workers, what does not,
and what each processing mode does to data visitation."""

import numpy as np
import pytest
import tensorflow as tf

from pipediag.builder.graph import PipelineGraph
from pipediag.errors import UsageError
from pipediag.modes.scale import graph_calls_python, open_feed, refuse_python, with_deadline
from pipediag.service.cluster import LocalCluster, ServiceError
from tests.fixtures import pipelines


@pytest.fixture(scope="module")
def two_workers():
    with LocalCluster(worker_cores=1) as cluster:
        cluster.add_workers(2)
        yield cluster
    assert cluster.stop().clean


def elements(feed, count):
    return sorted(int(v) for _ in range(count) for v in feed().numpy().ravel())


@pytest.mark.slow
def test_parallel_epochs_sends_every_example_once_per_worker(two_workers):
    ds = tf.data.Dataset.range(12).batch(3)
    feed = open_feed(ds, two_workers.target, "parallel_epochs", "tf", timeout_s=60)
    seen = sorted([int(v) for v in feed.firsts[0].numpy()] + elements(feed, 7))  # 2 workers × 4 batches
    feed.close()
    assert seen == sorted(list(range(12)) * 2)


def test_distributed_epoch_sends_every_example_once(two_workers):
    ds = tf.data.Dataset.range(12).batch(3)
    feed = open_feed(ds, two_workers.target, "distributed_epoch", "tf", timeout_s=60)
    seen = sorted(int(v) for v in feed.firsts[0].numpy())
    while feed.restarts == 0:
        batch = feed()
        if feed.restarts == 0:
            seen += [int(v) for v in batch.numpy()]
    feed.close()
    assert sorted(seen) == list(range(12))


def test_the_workers_need_no_user_code(two_workers):
    """The fixture module is importable here but not in the workers: the graph is what travels."""
    ds = pipelines.in_memory(batch_size=8)
    feed = open_feed(ds, two_workers.target, "parallel_epochs", "numpy", timeout_s=60)
    x, y = feed()
    feed.close()
    assert x.shape == (8, 256) and y.shape == (8,)


def test_py_function_is_refused_before_anything_starts_naming_the_stage():
    ds = pipelines.serial_sleep_map()
    graph = PipelineGraph.from_dataset(ds)
    with pytest.raises(UsageError) as caught:
        refuse_python(graph.stages(), graph)
    assert "`map(slow_read)`" in caught.value.message and "another process" in caught.value.message
    assert "TensorFlow ops" in caught.value.hint


def test_py_function_off_the_main_chain_is_found_too():
    def label(x):
        return tf.py_function(lambda v: v, [x], tf.int64)

    ds = tf.data.Dataset.zip((tf.data.Dataset.range(8), tf.data.Dataset.range(8).map(label))).batch(2)
    graph = PipelineGraph.from_dataset(ds)
    assert not any(s.has_py_function for s in graph.stages())
    assert graph_calls_python(graph)
    with pytest.raises(UsageError, match="a stage off the main chain"):
        refuse_python(graph.stages(), graph)
    assert not graph_calls_python(PipelineGraph.from_dataset(tf.data.Dataset.range(8).map(lambda x: x + 1)))


@pytest.mark.slow
def test_a_dispatcher_without_workers_is_an_error_not_a_hang():
    with LocalCluster() as empty:
        with pytest.raises(ServiceError, match="no answer from the tf.data service within 2 s") as caught:
            open_feed(tf.data.Dataset.range(4).batch(2), empty.target, "parallel_epochs", "tf", timeout_s=2)
        assert "workers" in caught.value.hint


def test_with_deadline_passes_results_and_errors_through():
    assert with_deadline(lambda: 42, 5, "x", "h") == 42
    with pytest.raises(KeyError):
        with_deadline(lambda: {}["missing"], 5, "x", "h")


def test_numpy_batches_equal_the_local_ones(two_workers):
    data = np.arange(32, dtype="float32").reshape(8, 4)
    ds = tf.data.Dataset.from_tensor_slices(data).batch(8)
    feed = open_feed(ds, two_workers.target, "parallel_epochs", "numpy", timeout_s=60)
    batch = feed.firsts[0]
    feed.close()
    assert isinstance(batch, np.ndarray) and np.array_equal(batch, data)
