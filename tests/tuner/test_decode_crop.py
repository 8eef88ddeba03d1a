"""Decoding only the crop window: the rewrite of decode_jpeg + crop inside the user's function."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.tuner import decode_crop, decode_crop_rewrite  # noqa: E402
from pipediag.tuner.rewrite import tune  # noqa: E402
from pipediag.tuner.rules import TuningFacts  # noqa: E402

FACTS = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=False)
SIZE, CROP = 96, 48


def jpegs(n=8):
    rng = np.random.default_rng(0)
    smooth = [np.kron(rng.integers(0, 255, (SIZE // 8, SIZE // 8, 3)), np.ones((8, 8, 1))).astype(np.uint8)
              for _ in range(n)]
    return [tf.io.encode_jpeg(image, quality=90).numpy() for image in smooth]


def random_crop(jpeg):
    image = tf.io.decode_jpeg(jpeg, channels=3)
    return tf.image.random_crop(image, [CROP, CROP, 3])


def fixed_crop(jpeg):
    return tf.slice(tf.io.decode_jpeg(jpeg, channels=3), [8, 16, 0], [CROP, CROP, 3])


def resized(jpeg):
    return tf.image.resize(tf.io.decode_jpeg(jpeg, channels=3), [CROP, CROP])


def crop_and_whole(jpeg):
    image = tf.io.decode_jpeg(jpeg, channels=3)
    return tf.image.random_crop(image, [CROP, CROP, 3]), tf.reduce_mean(tf.cast(image, tf.float32))


def dataset(fn):
    return tf.data.Dataset.from_tensor_slices(jpegs()).map(fn).batch(4)


def change_of(tuned):
    found = [c for c in tuned.changes if c.kind == "decode_crop"]
    return found[0] if found else None


def function_ops(ds):
    graph = PipelineGraph.from_dataset(ds)
    stage = next(s for s in graph.stages() if s.kind in ("map", "parallel_map"))
    return set().union(*(graph.function_ops(f) for f in graph.node_functions(stage.node)))


def own_ops(ds):
    """The ops of the map's own function, not of the helpers it calls (whose fallback for files
    that are not JPEGs decodes whole, as decode_jpeg did)."""
    graph = PipelineGraph.from_dataset(ds)
    stage = next(s for s in graph.stages() if s.kind in ("map", "parallel_map"))
    return {n.op for f in graph.node_functions(stage.node) for n in graph.functions[f].node_def}


def test_a_random_crop_after_decode_jpeg_decodes_only_the_window():
    tuned = tune(dataset(random_crop), FACTS, input_batches_per_sec=10)
    change = change_of(tuned)
    assert change.applied and change.stage == "map(random_crop)" and change.details["crop_size"] == [CROP, CROP]
    ops = function_ops(tuned.dataset)
    assert {"DecodeAndCropJpeg", "ExtractJpegShape"} <= ops and "DecodeJpeg" not in own_ops(tuned.dataset)
    batches = list(tuned.dataset.as_numpy_iterator())
    assert [b.shape for b in batches] == [(4, CROP, CROP, 3)] * 2 and batches[0].dtype == np.uint8


def crop_at(y, x):
    def fixed_crop(jpeg):
        return tf.slice(tf.io.decode_jpeg(jpeg, channels=3), [y, x, 0], [CROP, CROP, 3])

    return fixed_crop


@pytest.mark.parametrize("y, x", [(0, 0), (8, 16), (5, 21), (17, 3), (SIZE - CROP, SIZE - CROP)])
def test_the_window_gives_the_full_decodes_pixels_exactly(y, x):
    """libjpeg's windowed decode alone differs at the window's edge columns (colour upsampling
    without the neighbours); the wider window sliced down does not, on or off MCU boundaries."""
    ds = dataset(crop_at(y, x))
    graph = PipelineGraph.from_dataset(ds)
    stage = next(s for s in graph.stages() if s.kind == "map")
    decode_crop_rewrite.rewrite(graph, stage.node, decode_crop.find_in_stage(graph, stage.node))
    assert "DecodeJpeg" not in own_ops(graph.to_dataset())
    full = np.concatenate(list(ds.as_numpy_iterator()))
    window = np.concatenate(list(graph.to_dataset().as_numpy_iterator()))
    np.testing.assert_array_equal(full, window)


def test_a_deterministic_crop_is_rewritten_and_checked_equal():
    ds = dataset(fixed_crop)
    tuned = tune(ds, FACTS, input_batches_per_sec=10)
    assert change_of(tuned).applied
    for a, b in zip(ds.as_numpy_iterator(), tuned.dataset.as_numpy_iterator()):
        np.testing.assert_array_equal(a, b)


def test_a_decode_used_whole_says_nothing_and_one_also_cropped_says_why_not():
    assert change_of(tune(dataset(resized), FACTS, input_batches_per_sec=10)) is None
    change = change_of(tune(dataset(crop_and_whole), FACTS, input_batches_per_sec=10))
    assert not change.applied and change.reason.startswith("it also uses the whole decoded image")


def test_a_png_read_with_decode_jpeg_is_still_decoded_whole():
    """decode_jpeg also decodes PNGs (ImageNet has one among its JPEGs); decode_and_crop_jpeg does
    not: the rewritten function decodes a file that is not a JPEG whole, as before."""
    rng = np.random.default_rng(1)
    pngs = [tf.io.encode_png(rng.integers(0, 255, (SIZE, SIZE, 3), dtype=np.uint8)).numpy() for _ in range(4)]
    ds = tf.data.Dataset.from_tensor_slices(jpegs(4) + pngs).map(fixed_crop).batch(4)
    tuned = tune(ds, FACTS, input_batches_per_sec=10)
    assert change_of(tuned).applied
    for a, b in zip(ds.as_numpy_iterator(), tuned.dataset.as_numpy_iterator()):
        np.testing.assert_array_equal(a, b)
