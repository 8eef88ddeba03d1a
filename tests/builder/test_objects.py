"""The arrays a pipeline holds, read from its Dataset objects, and a graph over 2 GiB refused with its reason."""

import gc

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder import objects  # noqa: E402
from pipediag.builder.graph import GraphTooLarge, PipelineGraph  # noqa: E402

MIB = 1 << 20


def test_held_arrays_name_the_sources_and_what_a_function_captures():
    x = np.zeros((64, 1024, 4), np.float32)  # 1 MiB
    y = np.arange(64, dtype=np.int64)
    table = tf.constant(np.ones((512, 1024), np.float32))  # 2 MiB, captured by the map

    def lookup(x, y):
        return x, tf.gather(table, y)

    ds = tf.data.Dataset.from_tensor_slices((x, y)).map(lookup).batch(8)
    ds = ds.concatenate(tf.data.Dataset.from_tensors((x[:8], tf.zeros((8, 1024)))))
    held = objects.held_arrays(ds)
    assert [(a.where, a.shape, a.nbytes) for a in held[:3]] == [
        ("captured by lookup", (512, 1024), 2 * MIB),
        ("from_tensor_slices", (64, 1024, 4), MIB),
        ("from_tensors", (8, 1024, 4), MIB // 8),
    ]
    assert ("from_tensor_slices", (64,), 64 * 8) in [(a.where, a.shape, a.nbytes) for a in held]
    assert held[0].text() == "captured by lookup: float32 (512, 1024), 2.0 MiB"


def test_too_large_names_the_arrays_at_the_limit_and_is_silent_under_it():
    held = objects.held_arrays(tf.data.Dataset.from_tensor_slices(np.zeros((4 * MIB,), np.uint8)).batch(2))
    total = sum(a.nbytes for a in held)  # the array, and the batch's size and drop_remainder scalars
    assert total == 4 * MIB + 9
    assert objects.too_large(held, total + 1) is None
    reason = objects.too_large(held, total)
    assert reason.startswith("the pipeline holds 4.0 MiB of in-memory arrays (from_tensor_slices: uint8 (4194304,), 4.0 MiB)")
    assert "a graph cannot exceed 4.0 MiB (protobuf's limit)" in reason


def test_a_graph_over_the_limit_is_refused_before_it_is_serialized():
    ds = tf.data.Dataset.from_tensor_slices(np.zeros((2 * MIB,), np.uint8)).map(lambda v: v + 1).batch(4)
    with pytest.raises(GraphTooLarge, match="holds 2.0 MiB of in-memory arrays"):
        PipelineGraph.from_dataset(ds, limit_bytes=MIB)
    assert [s.kind for s in PipelineGraph.from_dataset(ds).stages()] == ["source", "map", "batch"]


def test_batching_is_read_from_the_dataset_objects():
    ds = tf.data.Dataset.range(10)
    assert not objects.has_batch_object(ds.map(lambda v: v * 2))
    assert objects.has_batch_object(ds.batch(2).prefetch(1))
    assert objects.has_batch_object(ds.padded_batch(2))
    assert not objects.has_batch_object(tf.data.Dataset.from_tensor_slices(np.zeros((4, 2))).unbatch())


@pytest.mark.slow
def test_an_array_over_2_gib_gives_the_reason_not_a_crash():
    """The real limit, once: TensorFlow returns an empty graph (no _Retval) for a pipeline over 2 GiB,
    which pipediag says is too large; by default it does not even try. ~2.1 GiB of zero pages, and
    one more copy of them while TensorFlow tries to serialize."""
    x = np.zeros((2**31 + MIB,), np.uint8)
    ds = tf.data.Dataset.from_tensors(x).batch(1)
    try:
        with pytest.raises(GraphTooLarge, match=r"holds 2\.00 GiB of in-memory arrays \(from_tensors: uint8"):
            PipelineGraph.from_dataset(ds)
        with pytest.raises(GraphTooLarge, match="TensorFlow returned an empty graph"):
            PipelineGraph.from_dataset(ds, limit_bytes=2**40)  # let it try: what TensorFlow does over the limit
    finally:
        del ds, x
        gc.collect()
