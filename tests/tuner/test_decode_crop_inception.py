"""Decoding only the crop window of inception-style crops (issue 13): `decode_image` as well as
`decode_jpeg`, a Slice whose size is known at run time only, and a tf.cond that center-crops the
whole image in one branch (tensorflow/models' classification parser with decode_jpeg_only=False).

Every rewrite is compared pixel for pixel with the original function on real JPEGs, 4:2:0 and
4:4:4, of several sizes, with deterministic crops (fixed offsets, or a stateless box of a fixed
seed), so the comparison is exact."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.tuner import decode_crop, decode_crop_across, decode_crop_rewrite  # noqa: E402
from pipediag.tuner.rewrite import tune  # noqa: E402
from pipediag.tuner.rules import TuningFacts  # noqa: E402

# No cache fits this RAM budget: the decode_crop change is measured on its own
FACTS = TuningFacts(cores=2, ram_budget_bytes=1024, fill_budget_seconds=10, latency_bound=False)
# (height, width): at most 96x96 the fixed-size crop below is the whole image (the cond's center
# crop runs), larger ones are cropped (the cond passes the crop on); odd sizes are off MCU edges
SIZES = [(96, 96), (64, 80), (75, 113), (130, 70), (120, 160)]
LIMIT = 96
BOX = tf.constant([0.0, 0.0, 1.0, 1.0], shape=[1, 1, 4])


def photo(rng, height, width):
    """Smooth colour gradients with edges and sensor-like noise: chroma varies across the window's
    edges, where a windowed decode without margin goes wrong."""
    coarse = rng.uniform(0, 255, (height // 8 + 2, width // 8 + 2, 3)).astype(np.float32)
    smooth = tf.image.resize(coarse[None], [height, width], method="bilinear")[0].numpy()
    smooth[:, width // 3:width // 3 + 2] = 255 - smooth[:, width // 3:width // 3 + 2]  # a sharp edge
    noisy = smooth + rng.normal(0, 12, smooth.shape)
    return np.clip(noisy, 0, 255).astype(np.uint8)


def jpegs():
    """Each size in 4:2:0 (chroma halved both ways, encode_jpeg's default) and in 4:4:4."""
    rng = np.random.default_rng(13)
    return [tf.io.encode_jpeg(photo(rng, h, w), quality=90, chroma_downsampling=subsampled).numpy()
            for subsampled in (True, False) for h, w in SIZES]


def pngs():
    rng = np.random.default_rng(14)
    return [tf.io.encode_png(photo(rng, h, w)).numpy() for h, w in SIZES]


def decode_image(jpeg):
    image = tf.io.decode_image(jpeg, channels=3)
    image.set_shape([None, None, 3])
    return image


def center_crop_image(image):  # tensorflow/models official/vision/ops/preprocess_ops.py
    image_size = tf.cast(tf.shape(image)[:2], dtype=tf.float32)
    crop_size = 0.875 * tf.math.minimum(image_size[0], image_size[1])
    crop_offset = tf.cast((image_size - crop_size) / 2.0, dtype=tf.int32)
    crop_size = tf.cast(crop_size, dtype=tf.int32)
    return image[crop_offset[0]:crop_offset[0] + crop_size, crop_offset[1]:crop_offset[1] + crop_size, :]


def checked_center_crop(image):
    """The center crop with an assert: a stateful op in the branch makes the cond an `If`, not a
    `StatelessIf`."""
    crop = center_crop_image(image)
    with tf.control_dependencies([tf.debugging.assert_positive(tf.shape(crop)[0])]):
        return tf.identity(crop)


def parser(crop_fn, center=center_crop_image):
    """classification_input.py's `_parse_train_image` (decode_jpeg_only=False) up to the crop."""
    def parse(jpeg):
        image = decode_image(jpeg)
        cropped = crop_fn(image)
        return tf.cond(tf.reduce_all(tf.equal(tf.shape(cropped), tf.shape(image))),
                       lambda: center(image), lambda: cropped)

    return parse


def fixed_window(image):
    """A window known only at run time: LIMIT x LIMIT (or less) from the center; the whole image
    when it is that small."""
    size = tf.minimum(tf.shape(image), [LIMIT, LIMIT, 3])
    return tf.slice(image, (tf.shape(image) - size) // 2, size)


def stateless_box(image):
    """random_crop_image of tensorflow/models with the stateless box of a fixed seed: the same box
    for the same image size every time. size[2] is -1."""
    begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
        tf.shape(image), BOX, seed=[1, 2], min_object_covered=0.08, aspect_ratio_range=(3. / 4., 4. / 3.),
        area_range=(0.08, 1.0), max_attempts=10)
    return tf.slice(image, begin, size)


def constant_slice(jpeg):
    return tf.slice(decode_image(jpeg), [5, 7, 0], [40, 50, 3])


def still_constant_slice(jpeg):  # expand_animations=False: a GIF gives its first frame, 3-D
    return tf.slice(tf.io.decode_image(jpeg, channels=3, expand_animations=False), [11, 3, 0], [33, 45, -1])


def runtime_size(jpeg):
    image = decode_image(jpeg)
    return tf.slice(image, [3, 9, 0], tf.stack([tf.shape(image)[0] - 14, tf.shape(image)[1] // 2, -1]))


def decode_jpeg_cond(jpeg):  # windows in both branches, one a Slice and one `image[a:b, c:d]`
    image = tf.io.decode_jpeg(jpeg, channels=3)
    return tf.cond(tf.shape(image)[0] > 100, lambda: image[10:60, 20:70], lambda: fixed_window(image))


def nested_cond(jpeg):  # a cond inside a branch takes the image in too
    image = decode_image(jpeg)
    cropped = fixed_window(image)
    return tf.cond(tf.reduce_all(tf.equal(tf.shape(cropped), tf.shape(image))),
                   lambda: tf.cond(tf.shape(image)[1] > 90, lambda: center_crop_image(image), lambda: image[4:50, 6:60]),
                   lambda: cropped)


FORMS = {
    "decode_image_constant_slice": constant_slice,
    "decode_image_still_constant_slice": still_constant_slice,
    "runtime_size": runtime_size,
    "cond_center_crop": parser(fixed_window),
    "cond_center_crop_stateful_if": parser(fixed_window, checked_center_crop),
    "cond_stateless_box": parser(stateless_box),
    "decode_jpeg_cond": decode_jpeg_cond,
    "nested_cond": nested_cond,
}


def map_node(graph):
    return next(s.node for s in graph.stages() if s.kind in ("map", "parallel_map"))


def rewritten(ds):
    graph = PipelineGraph.from_dataset(ds)
    node = map_node(graph)
    site = decode_crop.find_in_stage(graph, node)
    assert isinstance(site, decode_crop.Site), site
    decode_crop_rewrite.rewrite(graph, node, site)
    return site, graph


def own_ops(graph, branches=True):
    """The ops of the map's function and of its conds' branches, not of the helpers they call
    (whose fallback for files that are not JPEGs decodes whole, as the original did)."""
    names = list(graph.node_functions(map_node(graph)))
    ops = set()
    while names:
        function = graph.functions[names.pop()]
        for node in function.node_def:
            ops.add(node.op)
            if branches and node.op in decode_crop.COND_OPS:
                names += [node.attr["then_branch"].func.name, node.attr["else_branch"].func.name]
    return ops


def assert_same(original, tuned):
    a, b = list(original.as_numpy_iterator()), list(tuned.as_numpy_iterator())
    assert len(a) == len(b) > 0
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_decodes_only_the_window_and_gives_the_full_decodes_pixels(form):
    ds = tf.data.Dataset.from_tensor_slices(jpegs()).map(FORMS[form])
    site, graph = rewritten(ds)
    ops = own_ops(graph)
    assert not ops & {"DecodeJpeg", "DecodeImage"}, ops
    assert "DecodeAndCropJpeg" in graph.function_ops(graph.node_functions(map_node(graph))[0])
    assert_same(ds, graph.to_dataset())
    if "cond" in form:
        assert len(site.conds) == 1 and {b.attr for b in site.conds[0].branches} == {"then_branch", "else_branch"}
    if form == "nested_cond":  # (96, 96) takes the inner center crop, (64, 80) the inner window
        assert [b.attr for b in site.conds[0].branches if b.conds] == ["then_branch"]


def test_the_cond_forms_run_both_branches_on_these_images():
    """The comparison above covers the center crop and the passed-on crop: some sizes are at most
    LIMIT x LIMIT (the window is the whole image), others larger."""
    assert any(h <= LIMIT and w <= LIMIT for h, w in SIZES) and any(h > LIMIT or w > LIMIT for h, w in SIZES)
    whole = [fixed_window(tf.zeros([h, w, 3], tf.uint8)).shape == (h, w, 3) for h, w in SIZES]
    assert any(whole) and not all(whole)


def test_the_site_names_the_decoder_the_box_and_the_cond_and_a_stateful_cond_is_an_if():
    graph = PipelineGraph.from_dataset(tf.data.Dataset.from_tensor_slices(jpegs()).map(FORMS["cond_stateless_box"]))
    site = decode_crop.find_in_stage(graph, map_node(graph))
    assert site.decoder == "decode_image" and site.sampled_box and site.crop_size is None
    then = next(b for b in site.conds[0].branches if b.attr == "then_branch")
    assert then.shapes and then.slices  # the center crop: the image's shape and a window of it
    ds = tf.data.Dataset.from_tensor_slices(jpegs()).map(FORMS["cond_center_crop_stateful_if"])
    graph = PipelineGraph.from_dataset(ds)
    assert "If" in own_ops(graph, branches=False) and not decode_crop.find_in_stage(graph, map_node(graph)).sampled_box


@pytest.mark.parametrize("form", ["cond_stateless_box", "decode_image_constant_slice", "runtime_size"])
def test_a_png_through_decode_image_is_still_decoded_whole(form):
    """decode_image decodes PNG (and GIF, BMP) too, decode_and_crop_jpeg only JPEG: files that are
    not JPEGs take the helpers' fallback, the whole decode, as before."""
    ds = tf.data.Dataset.from_tensor_slices(jpegs()[:3] + pngs()).map(FORMS[form])
    assert_same(ds, rewritten(ds)[1].to_dataset())


def whole_in_a_branch(jpeg):
    image = decode_image(jpeg)
    cropped = fixed_window(image)
    return tf.cond(tf.reduce_all(tf.equal(tf.shape(cropped), tf.shape(image))), lambda: image, lambda: cropped)


def resized_in_a_branch(jpeg):
    image = decode_image(jpeg)
    cropped = fixed_window(image)
    return tf.cond(tf.reduce_all(tf.equal(tf.shape(cropped), tf.shape(image))),
                   lambda: tf.image.resize(image, [32, 32]), lambda: tf.image.resize(cropped, [32, 32]))


def resized_beside_the_crop(jpeg):
    image = decode_image(jpeg)
    return tf.image.resize(stateless_box(image), [32, 32]) + tf.image.resize(image, [32, 32])


@pytest.mark.parametrize("fn, where", [
    (whole_in_a_branch, "(in its result, inside a tf.cond branch)"),
    (resized_in_a_branch, "inside a tf.cond branch)"),
    (resized_beside_the_crop, "(in ExpandDims)"),
])
def test_a_whole_image_read_anywhere_is_refused_with_the_reason(fn, where):
    ds = tf.data.Dataset.from_tensor_slices(jpegs()).map(fn)
    graph = PipelineGraph.from_dataset(ds)
    reason = decode_crop.find_in_stage(graph, map_node(graph))
    assert isinstance(reason, str) and reason.startswith("it also uses the whole decoded image") and where in reason
    change = next(c for c in tune(ds, FACTS, input_batches_per_sec=10).changes if c.kind == "decode_crop")
    assert not change.applied and change.reason == reason


def test_the_tuned_mode_rewrites_the_inception_form_and_its_safety_check_passes():
    ds = tf.data.Dataset.from_tensor_slices(jpegs()).map(FORMS["cond_stateless_box"]).map(
        lambda image: tf.image.resize(image, [48, 48])).batch(2)
    tuned = tune(ds, FACTS, input_batches_per_sec=10)
    change = next(c for c in tuned.changes if c.kind == "decode_crop")
    assert change.applied and change.stage == "map(parse)"
    assert change.details["decoder"] == "decode_image" and change.details["sampled_box"] and change.details["center_crop"]
    np.testing.assert_array_equal(np.concatenate(list(ds.as_numpy_iterator())),
                                  np.concatenate(list(tuned.dataset.as_numpy_iterator())))


def crop_with_cond(image):
    cropped = stateless_box(image)
    return tf.cond(tf.reduce_all(tf.equal(tf.shape(cropped), tf.shape(image))),
                   lambda: center_crop_image(image), lambda: cropped)


def test_a_cond_in_the_crop_stage_of_a_decode_moved_across_stages():
    ds = tf.data.Dataset.from_tensor_slices(jpegs()).map(decode_image).prefetch(1).map(crop_with_cond)
    graph = PipelineGraph.from_dataset(ds)
    crop = [s for s in graph.stages() if s.kind in ("map", "parallel_map")][-1].node
    site = decode_crop_across.find_across(graph, crop)
    assert isinstance(site, decode_crop.AcrossSite) and len(site.conds) == 1, site
    decode_crop_rewrite.rewrite_across(graph, site)
    assert_same(ds, graph.to_dataset())
