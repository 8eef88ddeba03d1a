"""The stages read from the Python Dataset objects agree with those read from the graph, and each
object is the pipeline's cut at its stage."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.builder.object_chain import ObjectChain  # noqa: E402


def decode(x):
    return tf.cast(x, tf.float32) * 2.0


def augment(x):
    return x + tf.random.uniform([])


def keep(x):
    return x >= 0


def slow_read(x):
    return tf.py_function(lambda v: v, [x], tf.float32)


def examples():
    yield from range(8)


def _fields(stages):
    return [(s.kind, s.label, s.function, s.parallelism, s.buffer_size, s.is_random, s.fixed_order, s.has_py_function)
            for s in stages]


PIPELINES = {
    "serial": lambda: tf.data.Dataset.range(100).shuffle(10).map(decode).map(augment).batch(8).prefetch(2),
    "parallel": lambda: tf.data.Dataset.from_tensor_slices(np.arange(64.0, dtype=np.float32))
    .map(slow_read, num_parallel_calls=3).filter(keep).cache().repeat(2).batch(4, drop_remainder=True)
    .prefetch(tf.data.AUTOTUNE),
    "fixed_order": lambda: tf.data.Dataset.range(32).shuffle(8, reshuffle_each_iteration=False)
    .interleave(lambda i: tf.data.Dataset.from_tensors(i), cycle_length=2, num_parallel_calls=2).padded_batch(4),
    "generator": lambda: tf.data.Dataset.from_generator(examples, output_signature=tf.TensorSpec([], tf.int64))
    .map(decode).batch(2).with_options(tf.data.Options()),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_the_object_chain_reads_the_stages_the_graph_reads(name):
    ds = PIPELINES[name]()
    assert _fields(ObjectChain(ds).stages()) == _fields(PipelineGraph.from_dataset(ds).stages())


def test_each_cut_is_the_users_object_at_that_stage():
    x = np.arange(40, dtype=np.float32)
    source = tf.data.Dataset.from_tensor_slices(x)
    mapped = source.map(decode)
    ds = mapped.batch(8)
    chain = ObjectChain(ds)
    stages = chain.stages()
    assert [s.label for s in stages] == ["TensorSliceDataset", "map(decode)", "batch(8)"]
    assert all(chain.cut(s.node) is obj for s, obj in zip(stages, (source, mapped, ds)))
    assert [float(v) for v in chain.cut(stages[1].node).take(3)] == [0.0, 2.0, 4.0]
