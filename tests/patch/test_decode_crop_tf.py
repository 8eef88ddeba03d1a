"""The decode_crop source edit, run: the patched function gives the full decode's pixels (4:2:0 and
4:4:4 JPEGs, offsets at the edges and inside), its random crops are windows of the image, and the
patched builder's graph passes the stage check."""

import textwrap

import numpy as np
import pytest
import tensorflow as tf

from pipediag.builder.prepare import prepare_dataset
from pipediag.patch.prove import check_stage, patched_builder, stage_ops
from pipediag.patch.source import patch_source
from pipediag.records.change import Change

H, W = 75, 61  # not whole MCUs: the windows' edges fall inside chroma blocks


def jpegs() -> list[bytes]:
    rng = np.random.default_rng(5)
    smooth = np.stack([*np.meshgrid(np.arange(W) * 4, np.arange(H) * 3), np.full((H, W), 90)], -1) % 256
    noisy = rng.integers(0, 256, (H, W, 3))
    out = []
    for pixels in (smooth, noisy):
        image = tf.constant(pixels.astype(np.uint8))
        for subsample in (True, False):  # 4:2:0, 4:4:4
            out.append(tf.io.encode_jpeg(image, quality=90, chroma_downsampling=subsample).numpy())
    return out


BUILDER = textwrap.dedent('''
    import tensorflow as tf


    def crop(jpeg):
        image = tf.io.decode_jpeg(jpeg, channels=3)
        image = {crop}
        return image


    def make_dataset():
        return tf.data.Dataset.from_tensor_slices(JPEGS).map(crop).batch(2)
''')


def patched(tmp_path, crop: str):
    source = BUILDER.format(crop=crop)
    patch = patch_source(source, "make_dataset", [Change("decode_crop", "map(crop)", "n", "d", True)],
                         path=str(tmp_path / "builder.py"))
    assert [e.done for e in patch.edits] == [True], patch.edits
    namespace = {"JPEGS": jpegs()}
    exec(compile(patch.patched, "patched.py", "exec"), namespace)
    return patch, namespace


@pytest.mark.parametrize("top, left, h, w", [(0, 0, 16, 16), (1, 3, 17, 9), (7, 13, 33, 31), (59, 45, 16, 16),
                                             (0, 0, H, W), (74, 60, 1, 1)])
def test_bounding_box_crop_gives_the_full_decodes_pixels(tmp_path, top, left, h, w):
    _, ns = patched(tmp_path, f"tf.image.crop_to_bounding_box(image, {top}, {left}, {h}, {w})")
    for jpeg in ns["JPEGS"]:
        whole = tf.io.decode_jpeg(jpeg, channels=3).numpy()
        got = ns["crop"](tf.constant(jpeg)).numpy()
        assert got.shape == (h, w, 3)
        np.testing.assert_array_equal(got, whole[top:top + h, left:left + w])


def test_random_crops_are_windows_of_the_image_with_a_static_shape(tmp_path):
    _, ns = patched(tmp_path, "tf.image.random_crop(image, [20, 24, 3])")
    traced = tf.function(ns["crop"]).get_concrete_function(tf.TensorSpec([], tf.string))
    assert traced.output_shapes.as_list() == [20, 24, 3]  # as random_crop's: models downstream can build
    offsets = set()
    for jpeg in ns["JPEGS"][:2]:
        whole = tf.io.decode_jpeg(jpeg, channels=3).numpy()
        for _ in range(8):
            got = ns["crop"](tf.constant(jpeg)).numpy()
            found = [(t, x) for t in range(H - 20 + 1) for x in range(W - 24 + 1)
                     if np.array_equal(whole[t:t + 20, x:x + 24], got)]
            assert found, "a patched random crop is not a window of the full decode"
            offsets.add(found[0])
    assert len(offsets) > 4  # the offsets are drawn, not fixed


def test_the_patched_builders_graph_passes_the_stage_check(tmp_path):
    patch, _ = patched(tmp_path, "tf.image.random_crop(image, [20, 24, 3])")
    patch = patch.__class__(patch.path, patch.function, patch.original,
                            patch.patched.replace("import tensorflow as tf", f"import tensorflow as tf\nJPEGS = {jpegs()!r}"),
                            patch.edits)
    with patched_builder(patch) as builder:
        prepared = prepare_dataset(builder, {}, None, False, 0)
        check = check_stage(patch.edits[0], list(prepared.stages), None, stage_ops(prepared.graph))
    assert check.ok, check.text
    assert "DecodeAndCropJpeg" in check.text
    original = prepare_dataset(lambda: tf.data.Dataset.from_tensor_slices(jpegs()).map(
        lambda j: tf.image.random_crop(tf.io.decode_jpeg(j, channels=3), [20, 24, 3])).batch(2), {}, None, False, 0)
    stage = next(s for s in original.stages if s.kind == "map")
    assert not check_stage(patch.edits[0].__class__("decode_crop", stage.label, "d", True),
                           list(original.stages), None, stage_ops(original.graph)).ok
