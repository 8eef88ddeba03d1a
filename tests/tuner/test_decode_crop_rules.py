"""decode_crop rules on scripted stages (no TensorFlow): across stages against a planned cache, and the fix's code."""

from pipediag.fixes import catalog
from pipediag.records.change import Change
from pipediag.records.stage import Stage
from pipediag.tuner.rules import decode_crop_change, decode_crop_under_cache

CHAIN = ["source", "decode", "prefetch", "crop", "batch"]


def stage(node):
    return Stage(index=CHAIN.index(node), node=node, op="MapDataset", kind="map", function=node, parallelism=1)


MOVED = decode_crop_change(stage("crop"), None, (64, 64), stage("decode"))


def cache_after(node, applied=True):
    return Change("cache", f"after {node}", node, "cache", applied, None if applied else "too big")


def test_the_change_names_both_stages_and_the_crop():
    assert MOVED.applied and MOVED.stage == "map(crop)" and MOVED.details["decode_stage"] == "map(decode)"
    assert MOVED.details["crop_size"] == [64, 64] and MOVED.description.startswith("map(crop) only crops the images")


def test_a_cache_between_the_decode_and_the_crop_keeps_the_decode_where_it_is():
    for node in ("decode", "prefetch"):
        left = decode_crop_under_cache(MOVED, cache_after(node), CHAIN)
        assert not left.applied and "holds the decoded images" in left.reason


def test_a_cache_elsewhere_or_not_applied_leaves_it():
    assert decode_crop_under_cache(MOVED, cache_after("source"), CHAIN).applied  # caches the JPEG bytes
    assert decode_crop_under_cache(MOVED, cache_after("crop"), CHAIN).applied  # caches the crops
    assert decode_crop_under_cache(MOVED, cache_after("prefetch", applied=False), CHAIN).applied
    assert decode_crop_under_cache(MOVED, None, CHAIN).applied


def test_an_inception_style_crop_gets_the_header_box_code_with_its_decoder_and_center_crop():
    form = {"decoder": "decode_image", "sampled_box": True, "center_crop": True}
    change = decode_crop_change(stage("crop"), None, None, form=form)
    assert change.applied and change.details == {"crop_size": None, **form}
    code = catalog.code("decode_crop", change.stage, **change.details)
    assert code.startswith("# in crop: instead of decode_image(jpeg, channels=3), then tf.slice(image, begin, size)")
    assert "tf.image.sample_distorted_bounding_box(shape, bbox, ...)" in code
    assert "decode_and_crop_jpeg(jpeg, tf.stack([begin[0], begin[1], size[0], size[1]]), channels=3)" in code
    assert "center-crops the whole image" in code and "tf.io.is_jpeg(jpeg)" in code
    plain = catalog.code("decode_crop", "map(crop)", **decode_crop_change(stage("crop"), None, (64, 64)).details)
    assert "random_crop(image, [64, 64, 3])" in plain and "sample_distorted_bounding_box" not in plain
