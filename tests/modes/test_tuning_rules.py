"""The tuning rules on plain stages and numbers (no TensorFlow)."""

from pipediag.builder.stages import Stage
from pipediag.modes.tuning_rules import (
    already_cached_change,
    CacheEstimate,
    CachePoint,
    TuningFacts,
    cache_change,
    cache_point,
    counting_verdict,
)

FACTS = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=False)
DECODE = Stage(1, "MapDataset/_1", "MapDataset", "map", function="decode")
AT_DECODE = CachePoint(DECODE, DECODE.node)


def test_a_counted_cache_that_fits_both_budgets_is_applied_and_says_it_was_counted():
    change = cache_change(AT_DECODE, CacheEstimate("MapDataset/_1", 512, 196_608.0, 0.8, counted=True), FACTS)
    assert change.applied and change.details["elements_from"] == "one counting pass"
    assert change.description.endswith("512 elements, ~96 MiB, counted in one 0.8 s pass (TensorFlow does not know "
                                       "the length there)")


def test_a_count_that_failed_says_why():
    why = "its length is unknown, and one pass to count it did not end within 10 s (5 elements so far): ..."
    change = cache_change(AT_DECODE, CacheEstimate("MapDataset/_1", None, 4.0, None, unknown_reason=why), FACTS)
    assert not change.applied and change.reason == why
    plain = cache_change(AT_DECODE, CacheEstimate("MapDataset/_1", None, None, None), FACTS)
    assert plain.reason == "the pipeline is infinite or of unknown length at that point"


def test_counting_stops_at_the_ram_budget_first_then_at_the_time_budget():
    assert counting_verdict(100, 2**29, 1.0, False, FACTS) is None
    over = counting_verdict(100, 2**30 + 1, 11.0, False, FACTS)
    assert "passed the RAM budget of 1.0 GiB after 100 elements" in over and "snapshot" in over
    slow = counting_verdict(100, 2**20, 10.5, False, FACTS)
    assert "did not end within 10 s (100 elements so far)" in slow
    # A pass that ended, however slowly, has its answer; cache_change then judges its fill time.
    assert counting_verdict(100, 2**20, 10.5, True, FACTS) is None
    late = cache_change(AT_DECODE, CacheEstimate("MapDataset/_1", 100, 2**14, 10.5, counted=True), FACTS)
    assert not late.applied and "longer than the 10 s" in late.reason


def stage(index, kind, op, **kw):
    return Stage(index, f"{op}/_{index}", op, kind, **kw)


READ = stage(0, "source", "TFRecordDataset", source_files=1)
PARSE = stage(1, "parallel_map", "ParallelMapDatasetV2", function="parse_and_decode")
OWN_CACHE = stage(2, "cache", "CacheDatasetV2")
NEST = stage(3, "map", "MapDataset", function="lookup_nest")
PREFETCH = stage(4, "prefetch", "PrefetchDataset")
REPEAT = stage(5, "repeat", "RepeatDataset")
AUGMENT = stage(6, "map", "MapDataset", function="augment", is_random=True)


def test_the_cache_goes_after_a_prefetch_right_behind_the_deepest_stage_and_is_named_after_the_stage():
    point = cache_point([READ, PARSE, NEST, PREFETCH, REPEAT, AUGMENT])
    assert point.stage is NEST and point.node == PREFETCH.node and point.existing is None


def test_a_cache_the_pipeline_already_has_does_not_stop_the_search_for_the_deepest_point():
    # tensorflow-datasets caches small datasets after decoding, before its own stages
    point = cache_point([READ, PARSE, OWN_CACHE, NEST, PREFETCH, REPEAT, AUGMENT])
    assert point.stage is NEST and point.node == PREFETCH.node and point.existing is OWN_CACHE
    assert not point.already_cached
    change = cache_change(point, CacheEstimate(PREFETCH.node, 512, 100.0, 0.1), FACTS)
    assert change.applied and "own cache comes earlier" in change.description


def test_a_cache_already_at_the_deepest_point_is_not_cached_again():
    point = cache_point([READ, PARSE, OWN_CACHE, PREFETCH, REPEAT, AUGMENT])
    assert point.stage is PARSE and point.already_cached
    change = already_cached_change(point)
    assert not change.applied and change.reason == "the pipeline already caches there (cache right after parallel_map(parse_and_decode))"


def test_no_cache_for_data_already_in_memory_that_is_only_regrouped():
    # issue 14: from_tensor_slices(x).batch(8).repeat().prefetch was offered cache x1.16
    slices = stage(0, "source", "TensorSliceDataset")
    batch = stage(1, "batch", "BatchDatasetV2")
    assert cache_point([slices, batch, stage(2, "repeat", "RepeatDataset"), stage(3, "prefetch", "PrefetchDataset")]) is None
    zipped = [slices, stage(1, "source", "RangeDataset"), stage(2, "zip", "ZipDataset"), stage(3, "batch", "BatchDatasetV2")]
    assert cache_point(zipped) is None


def test_a_cache_is_still_offered_after_work_on_in_memory_data_or_for_files():
    slices = stage(0, "source", "TensorSliceDataset")
    work = stage(1, "map", "MapDataset", function="featurize")
    point = cache_point([slices, work, stage(2, "batch", "BatchDatasetV2"), stage(3, "repeat", "RepeatDataset")])
    assert point is not None and point.stage.kind == "batch"
    files = cache_point([READ, stage(1, "batch", "BatchDatasetV2"), stage(2, "repeat", "RepeatDataset")])
    assert files is not None and files.stage.kind == "batch"
