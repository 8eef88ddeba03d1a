"""The source patcher on small builders: every edit kind, comments and formatting kept, refusals."""

import textwrap

import pytest

from pipediag.patch.source import patch_source
from pipediag.records.change import Change

pytest.importorskip("libcst")


def change(kind, stage, **details):
    return Change(kind, stage, f"node/{kind}", f"{kind} at {stage}", True, details=details)


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


BUILDER = src('''
    """Shards of JPEGs."""
    import tensorflow as tf


    def decode(record):  # parse one record
        return record


    def make_dataset(batch_size=32):
        # Read every shard, one after another.
        ds = tf.data.TFRecordDataset(FILES)   # odd spacing kept
        ds = ds.map(decode)  # decode first

        ds = ds.map(augment).shuffle(100)
        return ds.batch(batch_size)  # done
''')


def edited_lines(patch):
    return [line[1:] for line in patch.diff().splitlines() if line.startswith("+") and not line.startswith("+++")]


def test_parallel_map_adds_autotune_and_keeps_comments():
    patch = patch_source(BUILDER, "make_dataset", [change("parallel_map", "map(augment)")])
    assert [e.done for e in patch.edits] == [True]
    assert edited_lines(patch) == ["    ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE).shuffle(100)"]
    # everything else is byte for byte the original
    assert patch.patched.replace(", num_parallel_calls=tf.data.AUTOTUNE", "") == BUILDER


def test_parallel_map_replaces_a_serial_value():
    source = src('''
        import tensorflow as tf
        def make_dataset():
            return tf.data.Dataset.range(9).map(f, num_parallel_calls=1)
    ''')
    patch = patch_source(source, "make_dataset", [change("parallel_map", "map(f)")])
    assert "map(f, num_parallel_calls=tf.data.AUTOTUNE)" in patch.patched
    assert "num_parallel_calls=1" not in patch.patched


def test_cache_after_the_stage_keeps_the_comment():
    patch = patch_source(BUILDER, "make_dataset", [change("cache", "map(decode)")])
    assert edited_lines(patch) == ["    ds = ds.map(decode).cache()  # decode first"]


def test_cache_and_parallel_reads_on_nested_calls_both_land():
    source = src('''
        import tensorflow as tf
        def make_dataset(batch_size=32):
            ds = tf.data.TFRecordDataset(FILES).map(decode).shuffle(64)
            return ds.batch(batch_size)
    ''')
    patch = patch_source(source, "make_dataset", [change("interleave", "TFRecordDatasetV2(4 files)"),
                                                  change("cache", "map(decode)")])
    assert [e.done for e in patch.edits] == [True, True]
    assert ("ds = tf.data.TFRecordDataset(FILES, num_parallel_reads=tf.data.AUTOTUNE).map(decode).cache()"
            ".shuffle(64)") in patch.patched


def test_serial_interleave_and_flat_map():
    source = src('''
        import tensorflow as tf
        def make_dataset():
            files = tf.data.Dataset.from_tensor_slices(NAMES).shuffle(8)
            a = files.interleave(read_file, cycle_length=8)
            return a.flat_map(read_more)
    ''')
    patch = patch_source(source, "make_dataset", [change("interleave", "interleave(read_file)"),
                                                  change("interleave", "flat_map(read_more)")])
    assert "files.interleave(read_file, cycle_length=8, num_parallel_calls=tf.data.AUTOTUNE)" in patch.patched
    assert "a.interleave(read_more, num_parallel_calls=tf.data.AUTOTUNE)" in patch.patched


def test_vectorize_swaps_map_and_batch_and_keeps_a_multiline_layout():
    source = src('''
        import tensorflow as tf


        def make_dataset(batch_size=1024):
            ds = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(10).repeat()
            return ds.map(normalize).batch(
                batch_size,
                drop_remainder=True,  # static shapes
            )
    ''')
    patch = patch_source(source, "make_dataset", [change("vectorize_map", "map(normalize)")])
    assert patch.edits[0].done
    assert patch.patched.endswith(
        "    return ds.batch(\n"
        "        batch_size,\n"
        "        drop_remainder=True,  # static shapes\n"
        "    ).map(normalize, num_parallel_calls=tf.data.AUTOTUNE)\n"
    )


def test_vectorize_across_statements_is_refused_with_the_snippet():
    patch = patch_source(BUILDER, "make_dataset", [change("vectorize_map", "map(augment)")],
                         snippets={("vectorize_map", "map(augment)"): "ds.batch(n).map(augment)"})
    edit = patch.edits[0]
    assert not edit.done and "not one expression" in edit.reason
    assert edit.snippet == "ds.batch(n).map(augment)"
    assert not patch.changed


def test_prefetch_and_threading_on_every_return():
    source = src('''
        import tensorflow as tf
        def make_dataset(fast=True):
            ds = tf.data.Dataset.counter().map(fetch)
            if fast:
                # the quick path
                return ds.batch(8)
            return ds.batch(4)
    ''')
    patch = patch_source(source, "make_dataset", [change("prefetch", "batch(8)"),
                                                  change("threading", None, private_threadpool_size=32)])
    assert [e.done for e in patch.edits] == [True, True]
    assert patch.patched.count(".prefetch(tf.data.AUTOTUNE).with_options(options)") == 2
    assert patch.patched.count("options.threading.private_threadpool_size = 32") == 2
    # the comment above the return stays above the code that now leads up to it
    assert "# the quick path\n        options = tf.data.Options()" in patch.patched


def test_threading_picks_a_free_name():
    source = src('''
        import tensorflow as tf
        def make_dataset(options=None):
            return tf.data.Dataset.counter().map(fetch).batch(4)
    ''')
    patch = patch_source(source, "make_dataset", [change("threading", None)])
    assert "tuned_options = tf.data.Options()" in patch.patched
    assert ".with_options(tuned_options)" in patch.patched


def test_the_tensorflow_alias_of_the_file_is_used():
    source = src('''
        import tensorflow
        def make_dataset():
            return tensorflow.data.Dataset.range(9).map(f)
    ''')
    patch = patch_source(source, "make_dataset", [change("parallel_map", "map(f)")])
    assert "num_parallel_calls=tensorflow.data.AUTOTUNE" in patch.patched


def test_refuses_a_stage_built_in_a_loop():
    source = src('''
        import tensorflow as tf
        def make_dataset():
            ds = tf.data.Dataset.range(9)
            for f in (a, b):
                ds = ds.map(f)
            return ds.batch(2)
    ''')
    patch = patch_source(source, "make_dataset", [change("parallel_map", "map(f)"), change("prefetch", "batch(2)")])
    refused, done = patch.edits
    assert not refused.done and "built in a loop" in refused.reason
    assert done.done  # the other change still lands


def test_refuses_a_stage_built_by_a_helper():
    source = src('''
        import tensorflow as tf
        import tensorflow_datasets as tfds
        def make_dataset():
            return tfds.load("mnist", split="train").map(augment).batch(32)
    ''')
    patch = patch_source(source, "make_dataset", [change("cache", "map(decode_example)")])
    assert "not written in make_dataset's body" in patch.edits[0].reason


def test_refuses_two_calls_that_fit_the_label():
    source = src('''
        import tensorflow as tf
        def make_dataset():
            return tf.data.Dataset.range(9).map(lambda x: x).map(lambda x: x + 1)
    ''')
    patch = patch_source(source, "make_dataset", [change("parallel_map", "map(<lambda>)")])
    assert "2 calls" in patch.edits[0].reason


def test_refuses_decode_crop_and_snapshot_without_a_folder():
    patch = patch_source(BUILDER, "make_dataset", [change("decode_crop", "map(decode)"),
                                                   change("snapshot", "map(decode)")])
    assert not any(e.done for e in patch.edits)
    # BUILDER's decode does not decode and crop a JPEG (tests/patch/test_decode_crop_source.py has the forms)
    assert "pipediag edits only that form" in patch.edits[0].reason and "--snapshot-dir" in patch.edits[1].reason


def test_snapshot_with_a_folder():
    patch = patch_source(BUILDER, "make_dataset", [change("snapshot", "map(decode)")], snapshot_path="/data/snap")
    assert "ds = ds.map(decode).snapshot('/data/snap')  # decode first" in patch.patched


def test_refuses_a_file_without_the_builder_or_tensorflow():
    patch = patch_source("import numpy\n", "make_dataset", [change("prefetch", "batch(2)")])
    assert "no function make_dataset" in patch.edits[0].reason
    source = src('''
        from tensorflow import data
        def make_dataset():
            return data.Dataset.range(3).map(f)
    ''')
    patch = patch_source(source, "make_dataset", [change("parallel_map", "map(f)")])
    assert "import tensorflow" in patch.edits[0].reason


def test_diff_is_a_unified_diff_of_the_file():
    patch = patch_source(BUILDER, "make_dataset", [change("parallel_map", "map(augment)")], path="data/input.py")
    lines = patch.diff().splitlines()
    assert lines[0] == "--- a/data/input.py" and lines[1] == "+++ b/data/input.py"
    assert lines[2].startswith("@@ ")


def test_csv_read_as_lines_is_left_to_the_snippet():
    patch = patch_source(BUILDER, "make_dataset", [change("vectorize_map", "TFRecordDataset", form="csv")])
    assert not patch.edits[0].done and "apply the snippet" in patch.edits[0].reason
    assert patch.patched == BUILDER


HELPER_BUILT = src('''
    import tensorflow as tf
    import tensorflow_datasets as tfds


    def make_dataset(batch_size=32):
        return _load().repeat().map(augment).batch(batch_size)  # as read


    def via_a_variable(batch_size=32):
        ds = tfds.load("shapes", split="train", as_supervised=True)
        return ds.repeat().map(augment).batch(batch_size)
''')
TFDS_STAGES = ["ParallelInterleaveDatasetV4(8 files)", "parallel_map(decode)", "map(lookup_nest)",
               "prefetch(AUTOTUNE)", "repeat", "map(augment)", "batch(32)"]


def test_cache_of_a_stage_built_by_a_helper_goes_on_the_helpers_dataset():
    changes = [change("cache", "map(lookup_nest)"), change("parallel_map", "map(augment)")]
    patch = patch_source(HELPER_BUILT, "make_dataset", changes, stage_labels=TFDS_STAGES)
    assert [e.done for e in patch.edits] == [True, True], patch.edits
    assert edited_lines(patch) == [
        "    return _load().cache().repeat().map(augment, num_parallel_calls=tf.data.AUTOTUNE).batch(batch_size)  # as read"]


def test_cache_of_a_stage_built_elsewhere_is_refused_without_the_stages_or_through_a_variable():
    refused = patch_source(HELPER_BUILT, "make_dataset", [change("cache", "map(lookup_nest)")]).edits[0]
    assert not refused.done and "not written in make_dataset's body" in refused.reason
    refused = patch_source(HELPER_BUILT, "via_a_variable", [change("cache", "map(lookup_nest)")],
                           stage_labels=TFDS_STAGES).edits[0]
    assert not refused.done and "not written in via_a_variable's body" in refused.reason
    # the next stage after the cached one must be the builder's first call on the outside dataset
    stages = TFDS_STAGES[:4] + ["shuffle(100)"] + TFDS_STAGES[4:]
    refused = patch_source(HELPER_BUILT, "make_dataset", [change("cache", "map(lookup_nest)")],
                           stage_labels=stages).edits[0]
    assert not refused.done


REPEAT_FIRST = src('''
    import tensorflow as tf


    def make_dataset(batch_size=64):
        ds = tf.data.Dataset.from_tensor_slices((JPEGS, LABELS))
        # every epoch decodes every image again
        return ds.repeat().map(decode_and_resize).batch(batch_size)
''')


def test_a_cache_that_takes_the_repeats_place_moves_the_repeat_after_it():
    moved = change("cache", "map(decode_and_resize)", repeat_stage="repeat", repeat_node="RepeatDataset/_1")
    patch = patch_source(REPEAT_FIRST, "make_dataset", [moved])
    assert [e.done for e in patch.edits] == [True]
    assert edited_lines(patch) == ["    return ds.map(decode_and_resize).cache().repeat().batch(batch_size)"]
    counted = patch_source(REPEAT_FIRST.replace("repeat()", "repeat(3)"), "make_dataset", [moved])
    assert edited_lines(counted) == ["    return ds.map(decode_and_resize).cache().repeat(3).batch(batch_size)"]


def test_a_repeat_and_map_in_separate_statements_are_refused_with_the_reason():
    apart = REPEAT_FIRST.replace("return ds.repeat().map(decode_and_resize)",
                                 "ds = ds.repeat()\n    return ds.map(decode_and_resize)")
    moved = change("cache", "map(decode_and_resize)", repeat_stage="repeat", repeat_node="RepeatDataset/_1")
    patch = patch_source(apart, "make_dataset", [moved])
    assert not patch.changed and "not one expression" in patch.refused[0].reason


def test_a_moved_repeat_and_a_parallel_map_on_the_same_call_both_land():
    moved = change("cache", "map(decode_and_resize)", repeat_stage="repeat", repeat_node="RepeatDataset/_1")
    patch = patch_source(REPEAT_FIRST, "make_dataset", [change("parallel_map", "map(decode_and_resize)"), moved])
    assert edited_lines(patch) == ["    return ds.map(decode_and_resize, num_parallel_calls=tf.data.AUTOTUNE)"
                                   ".cache().repeat().batch(batch_size)"]
