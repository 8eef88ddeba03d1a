"""Decoding JPEGs at a reduced size before a downscaling resize (issue 25), on real JPEGs made here:
found only where the image is just resized, rebuilt by TensorFlow, close to the original but not
equal (an approximate change, checked as one), and exact where no reduced decode fits."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.tuner import decode_reduce  # noqa: E402
from pipediag.tuner.checks import check_outputs, compare_close, compare_values  # noqa: E402
from pipediag.tuner.rewrite import build, plan_tuning  # noqa: E402
from pipediag.tuner.rules import TuningFacts  # noqa: E402

FACTS = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=False)
OUT = 40


def photo(size, seed=0):
    """Smooth gradients with a little noise: a JPEG of it compresses like a photograph."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    base = np.stack([x, y, (x + y) / 2], -1) * 200 + rng.normal(0, 8, (size, size, 3))
    return np.clip(base, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def jpegs():
    return [tf.io.encode_jpeg(photo(160, seed)).numpy() for seed in range(6)]


def resized(jpeg):
    return tf.image.resize(tf.io.decode_jpeg(jpeg, channels=3), [OUT, OUT]) / 255.0


def antialiased(jpeg):
    return tf.image.resize(tf.io.decode_jpeg(jpeg, channels=3), [OUT, OUT], antialias=True)


def cropped(jpeg):
    return tf.image.resize(tf.io.decode_jpeg(jpeg, channels=3)[:100, :100], [OUT, OUT])


def shape_too(jpeg):
    image = tf.io.decode_jpeg(jpeg, channels=3)
    return tf.image.resize(image, [OUT, OUT]), tf.shape(image)


def stage_site(ds):
    graph = PipelineGraph.from_dataset(ds)
    stage = next(s for s in graph.stages() if s.kind in ("map", "parallel_map"))
    return decode_reduce.find_in_stage(graph, stage.node)


def test_a_decode_only_resized_is_found_with_its_size_bilinear_or_antialiased(jpegs):
    site = stage_site(tf.data.Dataset.from_tensor_slices(jpegs).map(resized))
    assert site.size == (OUT, OUT) and site.resize_op == "ResizeBilinear"
    assert stage_site(tf.data.Dataset.from_tensor_slices(jpegs).map(antialiased)).resize_op == "ScaleAndTranslate"


@pytest.mark.parametrize("fn", [cropped, shape_too])
def test_an_image_used_otherwise_than_by_the_resize_is_left_alone(jpegs, fn):
    assert stage_site(tf.data.Dataset.from_tensor_slices(jpegs).map(fn)) is None


def reduced_pipeline(jpegs, fn=resized):
    ds = tf.data.Dataset.from_tensor_slices(jpegs).map(fn).batch(3)
    plan = plan_tuning(ds, FACTS, input_batches_per_sec=100)
    change = next(c for c in plan.changes if c.kind == "decode_reduced")
    return ds, change, build(plan, [change.key])


def test_the_reduced_decode_is_close_to_the_original_and_says_it_is_approximate(jpegs):
    ds, change, tuned = reduced_pipeline(jpegs)
    assert change.applied and change.details["approximate"] and "APPROXIMATE" in change.description
    assert [c.applied for c in tuned.changes if c.kind == "decode_reduced"] == [True]
    original, reduced = list(ds.as_numpy_iterator()), list(tuned.dataset.as_numpy_iterator())
    assert compare_values(original, reduced) is None  # not the same pixels: 160 -> ratio 4 -> 40
    assert compare_close(original, reduced) is not None
    assert check_outputs(original, reduced, deterministic=True).ok is False
    assert check_outputs(original, reduced, deterministic=True, approximate=True).ok is True


def test_what_no_reduced_decode_fits_is_decoded_exactly_as_before(jpegs):
    small = [tf.io.encode_jpeg(photo(70, seed)).numpy() for seed in range(3)]  # under 2x40: decoded whole
    png = [tf.io.encode_png(photo(160, seed)).numpy() for seed in range(3)]  # decode_jpeg decodes PNG too
    for data in (small, png):
        ds, _, tuned = reduced_pipeline(data)
        assert compare_values(list(ds.as_numpy_iterator()), list(tuned.dataset.as_numpy_iterator())) is not None


def test_close_is_bounded():
    a = [np.linspace(0, 1, 100, dtype=np.float32)]
    assert compare_close(a, [a[0] + 0.02]) is not None
    assert compare_close(a, [a[0] + 0.1]) is None  # 10% of the range off on average
    assert compare_close([np.arange(4)], [np.arange(4) + 1]) is None  # integers must be equal


def returned_too(jpeg):
    image = tf.io.decode_jpeg(jpeg, channels=3)
    return tf.image.resize(image, [OUT, OUT]), image


def test_an_image_the_map_also_returns_is_left_alone(jpegs):
    ds = tf.data.Dataset.from_tensor_slices(jpegs).map(returned_too)
    assert stage_site(ds) is None
