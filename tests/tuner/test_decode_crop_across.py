"""Decode in one stage, crop in a later one: the decode moves into the crop stage as a windowed
decode (issue 13 item 2), for the user's own maps and for tensorflow-datasets' decode."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.tuner import decode_crop, decode_crop_across, decode_crop_rewrite  # noqa: E402
from pipediag.tuner.rewrite import build, plan_tuning, tune  # noqa: E402
from pipediag.tuner.rules import TuningFacts  # noqa: E402

# A RAM budget no cache fits in, as for a dataset too large to cache (a cache of the decoded images
# would exclude moving the decode: test_a_cache_of_the_decoded_images_wins)
FACTS = TuningFacts(cores=2, ram_budget_bytes=1024, fill_budget_seconds=10, latency_bound=False)
ROOMY = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=False)
SIZE, CROP = 96, 48


def images(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return [np.kron(rng.integers(0, 255, (SIZE // 8, SIZE // 8, 3)), np.ones((8, 8, 1))).astype(np.uint8)
            for _ in range(n)]


def jpegs(n=8):
    return [tf.io.encode_jpeg(image, quality=90).numpy() for image in images(n)]


def decode(jpeg, label):
    return tf.io.decode_jpeg(jpeg, channels=3), label


def relabel(image, label):  # element-wise, passes the image on untouched
    return image, label * 2


def crop_at(y, x):
    def crop(image, label):
        return tf.slice(image, [y, x, 0], [CROP, CROP, 3]), label

    return crop


CROPS = {
    "random_crop": lambda image, label: (tf.image.random_crop(image, [CROP, CROP, 3], seed=3), label),
    "stateless_random_crop": lambda image, label: (tf.image.stateless_random_crop(image, [CROP, CROP, 3], seed=[1, 2]),
                                                   label),
    "central_crop": lambda image, label: (tf.image.central_crop(image, 0.5), label),
    "indexing": lambda image, label: (image[5:53, 21:69], label),
    "indexing_negative_and_open": lambda image, label: (image[-50:, :-7], label),
    "indexing_channels": lambda image, label: (image[8:40, 3:35, 1:], label),
    "indexing_rows_only": lambda image, label: (image[10:20], label),
    "indexing_empty": lambda image, label: (image[60:40, 3:35], label),
}


def pipeline(crop, contents=None):
    contents = jpegs() if contents is None else contents
    ds = tf.data.Dataset.from_tensor_slices((contents, list(range(len(contents)))))
    return ds.map(decode).prefetch(2).map(relabel).shuffle(1, seed=0).map(crop).batch(4)


def crop_node(graph):
    return [s for s in graph.stages() if s.kind in ("map", "parallel_map")][-1].node


def rewritten(ds):
    graph = PipelineGraph.from_dataset(ds)
    site = decode_crop_across.find_across(graph, crop_node(graph))
    assert isinstance(site, decode_crop.AcrossSite), site
    decode_crop_rewrite.rewrite_across(graph, site)
    return graph


def stage_ops(graph):
    """The ops each map stage runs, by its function (parallel or not)."""
    return {s.function: set().union(*(graph.function_ops(f) for f in graph.node_functions(s.node)))
            for s in graph.stages() if s.kind in ("map", "parallel_map")}


def batches(ds, seed=0):
    tf.random.set_seed(seed)  # random_crop's op seed then draws the same offsets in both pipelines
    return [b for b in ds.as_numpy_iterator()]


def assert_same(a_batches, b_batches):
    assert len(a_batches) == len(b_batches)
    for a, b in zip(a_batches, b_batches):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("y, x", [(0, 0), (8, 16), (5, 21), (SIZE - CROP, SIZE - CROP)])
def test_the_decode_moves_into_the_crop_stage_and_gives_the_same_pixels(y, x):
    ds = pipeline(crop_at(y, x))
    graph = rewritten(ds)
    ops = stage_ops(graph)
    assert not ops["decode"] & {"DecodeJpeg", "DecodeAndCropJpeg"}  # it passes the JPEG bytes on
    assert "DecodeAndCropJpeg" in ops["crop"]
    assert_same(batches(ds), batches(graph.to_dataset()))


@pytest.mark.parametrize("name", sorted(CROPS))
def test_random_stateless_and_central_crops_give_the_same_pixels(name):
    ds = pipeline(CROPS[name])
    assert_same(batches(ds), batches(rewritten(ds).to_dataset()))


def test_a_png_among_the_files_is_still_decoded_whole():
    """decode_jpeg also decodes PNGs; decode_and_crop_jpeg does not: the rewrite falls back."""
    contents = jpegs(4) + [tf.io.encode_png(image).numpy() for image in images(4, seed=1)]
    ds = pipeline(crop_at(5, 21), contents)
    assert_same(batches(ds), batches(rewritten(ds).to_dataset()))


def test_the_tuned_mode_plans_it_naming_both_stages():
    tuned = tune(pipeline(crop_at(8, 16)), FACTS, input_batches_per_sec=10)
    change = next(c for c in tuned.changes if c.kind == "decode_crop")
    assert change.applied and change.stage == "map(crop)" and change.details["decode_stage"] == "map(decode)"
    assert change.details["crop_size"] == [CROP, CROP] and not change.details["tfds"]
    assert_same(batches(pipeline(crop_at(8, 16))), batches(tuned.dataset))


def uses_image(image, label):
    return image, label + tf.cast(tf.reduce_mean(tf.cast(image, tf.float32)) > 100, tf.int32)


@pytest.mark.parametrize("between, why", [
    (lambda ds: ds.map(uses_image), "map(uses_image) also uses the whole decoded image (in Cast)"),
    (lambda ds: ds.cache(), "cache between them keeps the decoded images"),
])
def test_a_stage_between_that_needs_the_image_is_named_as_the_reason(between, why):
    ds = tf.data.Dataset.from_tensor_slices((jpegs(), list(range(8)))).map(decode)
    ds = between(ds).map(crop_at(8, 16))
    tuned = tune(ds, FACTS, input_batches_per_sec=10)
    change = next(c for c in tuned.changes if c.kind == "decode_crop")
    assert not change.applied and why in change.reason


def test_an_image_not_decoded_upstream_says_nothing():
    ds = tf.data.Dataset.from_tensor_slices((np.stack(images()), list(range(8)))).map(crop_at(8, 16))
    assert not [c for c in tune(ds, FACTS, input_batches_per_sec=10).changes if c.kind == "decode_crop"]


# -- tensorflow-datasets: its own parse_and_decode stage decodes the JPEG ------------------------

tfds = pytest.importorskip("tensorflow_datasets")


class Jpegs(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """16 JPEG images with labels, prepared locally in a test's data dir."""

    name = "pipediag_crop_jpegs"
    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict({
                "image": tfds.features.Image(shape=(SIZE, SIZE, 3), encoding_format="jpeg"),
                "label": tfds.features.ClassLabel(num_classes=2),
            }),
            supervised_keys=("image", "label"),
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        for i, image in enumerate(images(16)):
            yield i, {"image": image, "label": i % 2}


@pytest.fixture(scope="module")
def builder(tmp_path_factory):
    tfds.disable_progress_bar()
    built = Jpegs(data_dir=str(tmp_path_factory.mktemp("tfds")))
    built.download_and_prepare()
    return built


def tfds_crop(x):
    return tf.image.random_crop(x["image"], [CROP, CROP, 3], seed=5), x["label"]


def from_tfds(builder, autocache=False, **kwargs):
    config = tfds.ReadConfig(try_autocache=autocache)
    return builder.as_dataset(split="train", shuffle_files=False, read_config=config, **kwargs)


def test_tfds_decode_moves_into_the_users_crop_and_gives_the_same_pixels(builder):
    ds = from_tfds(builder).map(tfds_crop).batch(4)
    plan = plan_tuning(ds, FACTS, input_batches_per_sec=10)
    change = next(c for c in plan.changes if c.kind == "decode_crop")
    # Alone, as the ablation builds it: the parallel map planned too would draw the seeded crops in another order
    tuned = build(plan, [change.key])
    assert change.applied and change.stage == "map(tfds_crop)"
    assert change.details["tfds"] and change.details["feature"] == "image"
    assert change.details["decode_stage"] == "parallel_map(parse_and_decode)"
    ops = stage_ops(PipelineGraph.from_dataset(tuned.dataset))
    assert "DecodeImage" not in ops["parse_and_decode"] and "DecodeAndCropJpeg" in ops["tfds_crop"]
    assert_same(batches(ds), batches(tuned.dataset))


def test_tfds_as_supervised_passes_the_image_through_its_own_map(builder):
    ds = from_tfds(builder, as_supervised=True).map(CROPS["random_crop"]).batch(4)
    assert_same(batches(ds), batches(rewritten(ds).to_dataset()))


def test_tfds_autocache_of_decoded_images_is_left_with_its_reason(builder):
    ds = from_tfds(builder, autocache=True).map(tfds_crop).batch(4)
    change = next(c for c in tune(ds, FACTS, input_batches_per_sec=10).changes if c.kind == "decode_crop")
    assert not change.applied and "keeps the decoded images" in change.reason


@pytest.mark.parametrize("details", [{"tfds": True, "feature": "image", "decode_stage": "parallel_map(parse_and_decode)"},
                                     {"decode_stage": "map(decode)"}, {}])
def test_the_fix_code_runs_and_crops_to_the_size_it_names(builder, details):
    """The snippet a user pastes: the tfds one on tfds' own dataset, the others on JPEG bytes."""
    from pipediag.fixes import catalog

    code = catalog.code("decode_crop", "map(tfds_crop)", crop_size=[CROP, 40], **details)
    lines = [line for line in code.splitlines() if not line.startswith("#")]
    if details.get("tfds"):
        ds = eval(lines[0].split("  #")[0].split("=", 1)[1], {"builder": builder, "tfds": tfds})
    else:
        ds = tf.data.Dataset.from_tensor_slices({"image": jpegs(4)})
    body = "\n".join("    " + line for line in lines[1 if details.get("tfds") else 0:])
    namespace = {"tf": tf}
    exec(f"def crop(x):\n    jpeg = x['image']\n{body}\n    return image", namespace)
    shapes = {tuple(image.shape) for image in ds.map(namespace["crop"]).take(4).as_numpy_iterator()}
    assert shapes == {(CROP, 40, 3)}


def test_a_tfds_rewrite_tensorflow_refuses_is_undone_and_left_for_the_user_to_write(builder, monkeypatch):
    from pipediag.builder.graph import GraphError

    original = decode_crop_rewrite.rewrite_across

    def refused(graph, site):
        original(graph, site)  # a half-edited graph, then a refusal
        raise GraphError("could not rebuild the pipeline from its graph: refused")

    monkeypatch.setattr(decode_crop_rewrite, "rewrite_across", refused)
    ds = from_tfds(builder).map(tfds_crop).batch(4)
    plan = plan_tuning(ds, FACTS, input_batches_per_sec=10)
    change = next(c for c in plan.changes if c.kind == "decode_crop")
    tuned = build(plan, [change.key])
    outcome = next(c for c in tuned.changes if c.kind == "decode_crop")
    assert not outcome.applied and outcome.details["by_hand"] and "refused" in outcome.reason
    assert_same(batches(ds), batches(tuned.dataset))  # the original stages, decoded by tfds as before


def test_a_cache_of_the_decoded_images_wins_over_moving_the_decode(builder):
    """Where the decoded images fit in RAM, the planned cache decodes each once: a windowed decode
    after it would run every epoch, so the decode stays where it is (the cache is planned)."""
    ds = from_tfds(builder).map(tfds_crop).batch(4)
    plan = plan_tuning(ds, ROOMY, input_batches_per_sec=10)
    change = next(c for c in plan.changes if c.kind == "decode_crop")
    cache = next(c for c in plan.changes if c.kind == "cache")
    assert cache.applied and not change.applied
    assert change.reason.startswith("the cache planned after parallel_map(parse_and_decode) holds the decoded images")
