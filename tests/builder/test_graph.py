"""Reading, cutting and editing real tf.data graphs."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.records.stage import function_label  # noqa: E402


def decode_example(x):
    return tf.cast(x, tf.float32) * 2.0


def augment(x):
    return x + tf.random.uniform([])


def counted(x):
    counter.assign_add(1)
    return x


counter = None


def test_stages_name_the_users_functions_and_flags():
    ds = tf.data.Dataset.range(100).shuffle(10).map(decode_example).map(augment).batch(8).prefetch(2)
    stages = PipelineGraph.from_dataset(ds).stages()
    assert [s.label for s in stages] == ["RangeDataset", "shuffle(10)", "map(decode_example)", "map(augment)", "batch(8)",
                                         "prefetch(2)"]
    by_label = {s.label: s for s in stages}
    assert by_label["shuffle(10)"].is_random
    assert not by_label["map(decode_example)"].is_random and by_label["map(decode_example)"].parallelism == 1
    assert by_label["map(augment)"].is_random


def test_py_function_and_state_writes_are_detected():
    global counter
    counter = tf.Variable(0, dtype=tf.int64)
    ds = tf.data.Dataset.range(10).map(lambda x: tf.py_function(lambda v: v, [x], tf.int64)).map(counted)
    stages = PipelineGraph.from_dataset(ds).stages()
    assert stages[1].has_py_function and stages[1].function == "<lambda>"
    assert stages[2].writes_state


def token_counts():
    for i in range(5):
        yield np.full([4], i, np.float32)


class Rows:
    def __call__(self):
        yield np.zeros([4], np.float32)


def test_from_generator_is_labelled_with_the_users_generator():
    ds = tf.data.Dataset.from_generator(token_counts, output_signature=tf.TensorSpec([4], tf.float32)).batch(2)
    graph = PipelineGraph.from_dataset(ds)
    generator = graph.stages()[1]
    assert (generator.label, generator.kind, generator.op) == ("from_generator(token_counts)", "from_generator",
                                                               "FlatMapDataset")
    assert generator.has_py_function and generator.parallelism == 1
    # Copies and cuts keep the name; a callable object is named by its class.
    assert graph.copy().stages()[1].label == "from_generator(token_counts)"
    rows = tf.data.Dataset.from_generator(Rows(), output_signature=tf.TensorSpec([4], tf.float32))
    assert PipelineGraph.from_dataset(rows).stages()[-1].label == "from_generator(Rows)"


def test_a_flat_map_that_is_not_a_generator_keeps_its_label():
    ds = tf.data.Dataset.range(3).flat_map(lambda x: tf.data.Dataset.from_tensors(x))
    assert PipelineGraph.from_dataset(ds).stages()[-1].label == "flat_map(<lambda>)"


def test_parallel_map_and_interleave_parallelism_are_read():
    files = tf.data.Dataset.from_tensor_slices(["a", "b"])
    ds = files.interleave(lambda f: tf.data.Dataset.from_tensors(f), cycle_length=4, num_parallel_calls=4)
    ds = ds.map(lambda x: x, num_parallel_calls=tf.data.AUTOTUNE)
    stages = PipelineGraph.from_dataset(ds).stages()
    assert (stages[1].kind, stages[1].parallelism) == ("parallel_interleave", 4)
    assert (stages[2].kind, stages[2].parallelism) == ("parallel_map", -1)


def test_file_reader_counts_its_files(tmp_path):
    paths = []
    for i in range(3):
        path = str(tmp_path / f"part-{i}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            w.write(b"x")
        paths.append(path)
    stages = PipelineGraph.from_dataset(tf.data.TFRecordDataset(paths)).stages()
    assert [s.label for s in stages] == ["TensorSliceDataset", "TFRecordDataset(3 files)"]
    assert stages[1].kind == "source" and stages[1].source_files == 3


def test_round_trip_keeps_elements_and_structure():
    ds = tf.data.Dataset.from_tensor_slices({"a": np.arange(6), "b": np.arange(6) * 2}).map(
        lambda d: {"a": d["a"], "b": d["b"] + 1}).batch(2)
    rebuilt = PipelineGraph.from_dataset(ds).to_dataset()
    assert rebuilt.element_spec == ds.element_spec
    assert [x["b"].tolist() for x in rebuilt.as_numpy_iterator()] == [x["b"].tolist() for x in ds.as_numpy_iterator()]


def test_cut_stops_at_a_stage():
    ds = tf.data.Dataset.range(10).map(decode_example).batch(4)
    graph = PipelineGraph.from_dataset(ds)
    cut = graph.cut(graph.stages()[1].node)
    assert list(cut.as_numpy_iterator())[:3] == [0.0, 2.0, 4.0]
    assert int(cut.cardinality()) == 10


def test_splice_inserts_a_transformation_midway():
    ds = tf.data.Dataset.range(10).map(decode_example).batch(4)
    graph = PipelineGraph.from_dataset(ds)
    graph.splice_over(graph.stages()[1].node, lambda d: d.cache(), "cache")
    assert [s.kind for s in graph.stages()] == ["source", "map", "cache", "batch"]
    out = [b.tolist() for b in graph.to_dataset().as_numpy_iterator()]
    assert out == [b.tolist() for b in ds.as_numpy_iterator()]


def test_tables_and_py_functions_survive_a_rebuild():
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer([1, 2], [10, 20]), -1)
    ds = tf.data.Dataset.from_tensor_slices([1, 2, 3]).map(table.lookup).map(
        lambda x: tf.py_function(lambda v: v + 1, [x], tf.int32))
    assert list(PipelineGraph.from_dataset(ds).to_dataset().as_numpy_iterator()) == [11, 21, 0]


@pytest.mark.parametrize(
    "name, label",
    [("__inference_Dataset_map_decode_example_20", "decode_example"), ("__inference_Dataset_map_lambda_37", "<lambda>"),
     ("__inference_Dataset_flat_map_read_file_9", "read_file"), ("__inference_Dataset_interleave_open_shard_4", "open_shard"),
     ("some_other_fn", "some_other_fn")],
)
def test_function_label(name, label):
    assert function_label(name) == label


def test_splice_keeps_the_names_of_the_stages_upstream():
    ds = tf.data.Dataset.range(10).map(decode_example).map(augment).batch(4)
    graph = PipelineGraph.from_dataset(ds)
    before = [s.node for s in graph.stages()]
    graph.splice_over(before[1], lambda d: d.cache(), "cache")
    after = [s.node for s in graph.stages()]
    assert after[:2] == before[:2] and after[3:] == before[2:]  # only the cache node is new
    graph.splice_over(graph.output, lambda d: d.prefetch(2), "prefetch")
    assert [s.node for s in graph.stages()][:5] == after


def test_splice_replaces_a_stretch_of_stages():
    ds = tf.data.Dataset.range(10).map(decode_example).batch(4)
    graph = PipelineGraph.from_dataset(ds)
    source, _, batch = [s.node for s in graph.stages()]
    graph.splice(source, batch, lambda d: d.batch(4).map(decode_example), "vectorize")
    assert [s.label for s in graph.stages()] == ["RangeDataset", "batch(4)", "map(decode_example)"]
    assert [b.tolist() for b in graph.to_dataset().as_numpy_iterator()] == [b.tolist() for b in ds.as_numpy_iterator()]


def test_cut_with_the_element_structure():
    ds = tf.data.Dataset.from_tensor_slices({"a": np.arange(4), "b": np.arange(4) * 2}).batch(2)
    graph = PipelineGraph.from_dataset(ds)
    source = graph.stages()[0].node
    assert set(next(iter(graph.cut(source, ds._input_dataset.element_spec)))) == {"a", "b"}


def test_user_functions_are_found_by_their_graph_name():
    from pipediag.builder.functions import user_functions

    ds = tf.data.Dataset.range(10).map(decode_example).filter(lambda x: x > 2.0).batch(2)
    found = user_functions(ds)
    graph = PipelineGraph.from_dataset(ds)
    map_stage = graph.stages()[1]
    name = graph.node_functions(map_stage.node)[0]
    assert found[name].python is decode_example
    assert found[name].input_structure == tf.TensorSpec([], tf.int64)
    assert len(found) == 2


def test_a_shuffle_that_does_not_reshuffle_has_a_fixed_order():
    ds = tf.data.Dataset.range(10).shuffle(10, reshuffle_each_iteration=False).shuffle(5).repeat()
    fixed, reshuffled = [s for s in PipelineGraph.from_dataset(ds).stages() if s.kind == "shuffle"]
    assert fixed.is_random and fixed.fixed_order
    assert reshuffled.is_random and not reshuffled.fixed_order
