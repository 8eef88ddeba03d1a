"""The first batch and the element spec (TensorFlow side): what the user's pipeline raises, and
which specs one step can take."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.dataset import common_spec, take_first_batch  # noqa: E402
from pipediag.errors import UsageError, UserCodeError  # noqa: E402


def _broken_read(x):
    raise OSError("/data/part-0 is truncated")


def test_a_pipeline_that_raises_on_its_first_batch_is_the_users_error():
    ds = tf.data.Dataset.range(4).map(lambda x: tf.py_function(_broken_read, [x], tf.int64)).batch(2)
    with pytest.raises(UserCodeError) as info:
        take_first_batch(ds)
    assert info.value.where == "pipeline" and "truncated" in info.value.message
    assert "first batch" in info.value.hint


def test_a_generator_that_calls_sys_exit_is_the_users_error_not_pipediags_exit():
    """TensorFlow turns a SystemExit inside the pipeline (a generator, a py_function) into an
    error naming it; pipediag reports that as the user's (exit 1), never exits with their code."""
    import sys

    def gen():
        yield 1
        sys.exit(3)

    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int32)).batch(2)
    with pytest.raises(UserCodeError) as info:
        take_first_batch(ds)
    assert info.value.where == "pipeline" and "SystemExit: 3" in str(info.value.error)


def test_an_empty_pipeline_is_a_usage_error():
    with pytest.raises(UsageError, match="empty"):
        take_first_batch(tf.data.Dataset.range(0).batch(2))


def test_common_spec_relaxes_sizes_and_refuses_other_structures():
    a = (tf.TensorSpec([None, 8], tf.float32), tf.TensorSpec([None], tf.int64))
    b = (tf.TensorSpec([None, 16], tf.float32), tf.TensorSpec([None], tf.int64))
    assert common_spec(a, b)[0].shape.as_list() == [None, None]
    assert common_spec(a, (tf.TensorSpec([None], tf.string), a[1])) is None  # another dtype
    assert common_spec(a, {"x": a[0], "y": a[1]}) is None  # another nesting


def test_a_batch_size_the_builder_cannot_take_is_said_not_dropped_silently():
    from pipediag.builder.prepare import prepare_dataset

    def batched_itself():  # takes no batch_size, batches by 4
        return tf.data.Dataset.range(64).map(lambda i: tf.cast(i, tf.float32)).batch(4)

    prepared = prepare_dataset(batched_itself, {}, 32, False, 1)
    assert prepared.element.batch_size == 4
    assert any("batch size 32 (--batch-size) was not used" in n for n in prepared.notes), prepared.notes
    assert not any("was not used" in n for n in prepare_dataset(batched_itself, {}, None, False, 1).notes)


def test_a_pipeline_over_the_graph_limit_is_prepared_without_its_graph(monkeypatch):
    """The path of an in-memory array over 2 GiB, on a 2 MiB one under a lowered limit: no graph,
    the reason and the advice in a note, batching and the stages read from the Dataset objects."""
    from pipediag.builder import objects
    from pipediag.builder.prepare import prepare_dataset

    monkeypatch.setattr(objects, "GRAPHDEF_LIMIT_BYTES", 1 << 20)
    x = np.zeros((512, 1024), np.float32)

    def unbatched():
        return tf.data.Dataset.from_tensor_slices(x)

    prepared = prepare_dataset(unbatched, {}, 16, False, 1)
    assert prepared.graph is None and prepared.chain is not None
    assert [s.label for s in prepared.stages] == ["TensorSliceDataset", "batch(16)"]  # read from the objects
    assert prepared.element.batch_size == 16 and "the dataset was unbatched: pipediag added .batch(16)" in prepared.notes
    note = next(n for n in prepared.notes if "in-memory arrays" in n)
    assert "(from_tensor_slices: float32 (512, 1024), 2.0 MiB)" in note, note
    assert "cache() would add nothing" in note and "Dataset.save(path)" in note and "from_generator" in note
    with pytest.raises(UsageError, match="yields single examples"):
        prepare_dataset(unbatched, {}, None, False, 1)
    batched = prepare_dataset(lambda: tf.data.Dataset.from_tensor_slices(x).batch(4), {}, None, False, 1)
    assert batched.graph is None and batched.element.batch_size == 4
