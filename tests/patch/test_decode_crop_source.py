"""The decode_crop source edit on small files: the forms it writes, what it keeps, what it refuses."""

import textwrap

import pytest

from pipediag.patch.source import patch_source
from pipediag.records.change import Change

pytest.importorskip("libcst")


def change(stage="parallel_map(augment)", **details):
    return Change("decode_crop", stage, "node/map", f"decode_crop at {stage}", True, details=details)


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def module(body: str, builder: str = "ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE)") -> str:
    return src('''
        import tensorflow as tf

        CROP = 224


        # Crops for training.
        def augment(jpeg, label):
        ''') + textwrap.indent(src(body), "    ") + src(f'''


        def make_dataset(batch_size=32):
            ds = tf.data.Dataset.from_tensor_slices((JPEGS, LABELS)).repeat()
            ds = {builder}
            return ds.batch(batch_size)
        ''')


RANDOM = '''
    # whole image first
    image = tf.io.decode_jpeg(jpeg, channels=3)  # decode
    image = tf.image.random_crop(image, [CROP, CROP + 0, 3])
    image = tf.image.resize(image, [112, 112]) / 255.0  # kept as it was
    return image, label
'''


def test_random_crop_becomes_a_window_decode_and_keeps_the_rest():
    source = module(RANDOM)
    patch = patch_source(source, "make_dataset", [change()])
    assert [e.done for e in patch.edits] == [True], patch.edits
    body = patch.patched.split("def augment", 1)[1]
    assert "decode_jpeg(" not in body and "random_crop" not in body
    assert "# whole image first" in body  # the comment above the decode stays above its replacement
    assert "jpeg_shape = tf.image.extract_jpeg_shape(jpeg)" in body
    assert "crop_left = tf.random.uniform([], 0, jpeg_shape[1] - (CROP + 0) + 1, dtype=tf.int32)" in body
    assert "image = decode_jpeg_window(jpeg, crop_top, crop_left, CROP, CROP + 0, channels=3)" in body
    assert "image = tf.image.resize(image, [112, 112]) / 255.0  # kept as it was" in body
    # the helper is added once, before the edited function; the builder and the comment above augment stay
    before, after = patch.patched.split("def decode_jpeg_window(", 1)
    assert "# Crops for training.\ndef augment" in after
    assert "tf.image.decode_and_crop_jpeg(" in after and "tf.slice(window" in after
    assert patch.patched.endswith(source.split("def make_dataset", 1)[1])
    compile(patch.patched, "patched.py", "exec")


def test_crop_to_bounding_box_uses_its_own_offsets():
    patch = patch_source(module('''
        decoded = tf.image.decode_jpeg(jpeg)
        return tf.image.crop_to_bounding_box(decoded, 8, 16, 64, 32) if False else label, label
    '''), "make_dataset", [change()])
    assert not patch.edits[0].done  # the crop is not an assignment right after the decode
    patch = patch_source(module('''
        decoded = tf.image.decode_jpeg(jpeg)
        image = tf.image.crop_to_bounding_box(decoded, 8, 16, 64, 32)
        return image, label
    '''), "make_dataset", [change()])
    assert patch.edits[0].done, patch.edits
    assert "    image = decode_jpeg_window(jpeg, 8, 16, 64, 32)\n" in patch.patched  # no channels: the decoder's default
    assert "random.uniform" not in patch.patched


def test_names_already_taken_get_a_prefix():
    source = module(RANDOM).replace("CROP = 224", "CROP = 224\njpeg_shape = crop_top = decode_jpeg_window = None")
    patch = patch_source(source, "make_dataset", [change()])
    assert patch.edits[0].done
    assert "def pipediag_decode_jpeg_window(" in patch.patched
    assert "crop_jpeg_shape = tf.image.extract_jpeg_shape(jpeg)" in patch.patched
    assert "crop_crop_top = tf.random.uniform" in patch.patched


@pytest.mark.parametrize("body, details, builder, why", [
    (RANDOM.replace("tf.io.decode_jpeg", "tf.io.decode_image"), {}, None, "no `decode_jpeg`"),
    (RANDOM.replace("[CROP, CROP + 0, 3])", "[CROP, CROP, 3], seed=7)"), {}, None, "seeded"),
    (RANDOM.replace("channels=3)", "channels=3, ratio=2)"), {}, None, "options"),
    (RANDOM.replace("/ 255.0  # kept", "/ 255.0 + tf.reduce_mean(whole)  # kept").replace(
        "image = tf.io.decode", "whole = tf.io.decode").replace("random_crop(image", "random_crop(whole"),
     {}, None, "read again"),
    (RANDOM.replace("decode_jpeg(jpeg,", "decode_jpeg(jpeg + b'',"), {}, None, "computed in the call"),
    (RANDOM.replace("[CROP, CROP + 0, 3]", "size"), {}, None, "[height, width, channels]"),
    (RANDOM, {"decode_stage": "map(decode)"}, None, "another stage"),
    (RANDOM, {"sampled_box": True}, None, "sample_distorted_bounding_box"),
    (RANDOM, {"tfds": True}, None, "tensorflow-datasets"),
    (RANDOM, {}, "ds.map(lambda j, y: augment(j, y))", "not written in make_dataset"),
    (RANDOM, {}, "ds.map(aug.augment)", "not named in this file"),
])
def test_refusals_say_why_and_leave_the_file_alone(body, details, builder, why):
    source = module(body, builder) if builder else module(body)
    patch = patch_source(source, "make_dataset", [change(**details)])
    edit = patch.edits[0]
    assert not edit.done
    assert why in edit.reason
    assert patch.patched == source


def test_a_function_defined_elsewhere_is_refused():
    source = module(RANDOM).replace("def augment(", "def augment_other(")
    edit = patch_source(source, "make_dataset", [change()]).edits[0]
    assert not edit.done and "no function augment is defined at the top level" in edit.reason


def test_decode_crop_with_another_edit_of_the_builder():
    patch = patch_source(module(RANDOM, "ds.map(augment)"), "make_dataset",
                         [change("map(augment)"), Change("parallel_map", "map(augment)", "n", "p", True)])
    assert [e.done for e in patch.edits] == [True, True]
    assert "ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE)" in patch.patched
    assert "decode_jpeg_window(jpeg, crop_top" in patch.patched
