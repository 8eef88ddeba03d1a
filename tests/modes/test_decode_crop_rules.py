"""decode_crop across stages against a planned cache: the rule on scripted stages (no TensorFlow)."""

from pipediag.builder.stages import Stage
from pipediag.modes.changes import Change
from pipediag.modes.tuning_rules import decode_crop_change, decode_crop_under_cache

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
