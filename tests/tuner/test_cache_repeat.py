"""A cache that takes an epoch repeat's place (issue 25): `from_tensor_slices((jpegs, labels)).repeat()
.map(decode_and_resize).batch(n)` decodes every image every epoch; the tuned pipeline decodes once,
`map(decode_and_resize).cache().repeat().batch(n)`, on real JPEGs made in a temporary folder."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.tuner.rewrite import build, plan_tuning  # noqa: E402
from pipediag.tuner.rules import TuningFacts  # noqa: E402

FACTS = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=False)
IMAGES, SIZE, OUT = 12, 64, 32


@pytest.fixture(scope="module")
def jpegs():
    rng = np.random.default_rng(0)
    return [tf.io.encode_jpeg(rng.integers(0, 255, (SIZE, SIZE, 3), dtype=np.uint8)).numpy() for _ in range(IMAGES)]


def decode_and_resize(jpeg, label):
    image = tf.io.decode_jpeg(jpeg, channels=3)
    return tf.image.resize(image, [OUT, OUT]) / 255.0, label


def decode_and_flip(jpeg, label):
    image, label = decode_and_resize(jpeg, label)
    return tf.image.random_flip_left_right(image), label


def pipeline(jpegs, fn, count=-1):
    return tf.data.Dataset.from_tensor_slices((jpegs, np.arange(IMAGES))).repeat(count).map(fn).batch(5)


def cache_of(plan):
    return next(c for c in plan.changes if c.kind == "cache")


def test_the_repeat_moves_after_the_cache_and_the_batches_stay_the_same(jpegs):
    ds = pipeline(jpegs, decode_and_resize)
    plan = plan_tuning(ds, FACTS, input_batches_per_sec=100)
    cache = cache_of(plan)
    assert cache.applied and cache.stage == "map(decode_and_resize)"
    assert cache.details["elements"] == IMAGES and cache.details["estimated_bytes"] > IMAGES * OUT * OUT * 3 * 4
    assert "repeat before it moved right after the cache" in cache.description
    tuned = build(plan, [cache.key])
    assert tuned.cache_fill_ns > 0
    kinds = [s.kind for s in PipelineGraph.from_dataset(tuned.dataset).stages()]
    assert kinds[:5] == ["source", "map", "cache", "repeat", "batch"]
    # three epochs and a bit, batches across the epoch boundaries included
    for a, b in zip(tuned.dataset.take(8).as_numpy_iterator(), ds.take(8).as_numpy_iterator()):
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_a_counted_repeat_keeps_its_count(jpegs):
    ds = pipeline(jpegs, decode_and_resize, count=2)
    plan = plan_tuning(ds, FACTS, input_batches_per_sec=100)
    tuned = build(plan, [cache_of(plan).key])
    got = [b[1].tolist() for b in tuned.dataset.as_numpy_iterator()]
    assert got == [b[1].tolist() for b in ds.as_numpy_iterator()] and sum(len(g) for g in got) == 2 * IMAGES


def test_a_random_map_after_the_repeat_is_not_cached(jpegs):
    plan = plan_tuning(pipeline(jpegs, decode_and_flip), FACTS, input_batches_per_sec=100)
    assert [c for c in plan.changes if c.kind == "cache"] == []


def test_decoded_images_over_the_ram_budget_are_not_cached(jpegs):
    small = TuningFacts(cores=2, ram_budget_bytes=IMAGES * OUT * OUT, fill_budget_seconds=10, latency_bound=False)
    cache = cache_of(plan_tuning(pipeline(jpegs, decode_and_resize), small, input_batches_per_sec=100))
    assert not cache.applied and "over the RAM budget" in cache.reason
