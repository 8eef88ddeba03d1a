"""The tuning rules on plain stages and numbers (no TensorFlow)."""

from pipediag.records.stage import Stage
from pipediag.tuner.cache_rules import already_cached_change, cache_change, cache_point, counting_verdict
from pipediag.tuner.rules import CacheEstimate, CachePoint, TuningFacts

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


FILES = stage(0, "source", "TensorSliceDataset")
FIXED_SHUFFLE = stage(1, "shuffle", "ShuffleDatasetV3", is_random=True, fixed_order=True, buffer_size=1000)
FILE_SHUFFLE = stage(1, "shuffle", "ShuffleDatasetV3", is_random=True, buffer_size=1000)
DECODE_FILES = stage(2, "parallel_map", "ParallelMapDatasetV2", function="process_path")
ELEMENT_SHUFFLE = stage(3, "shuffle", "ShuffleDatasetV3", is_random=True, buffer_size=1000)
BATCH = stage(4, "batch", "BatchDatasetV2", buffer_size=32)


def test_a_shuffle_that_does_not_reshuffle_is_deterministic_for_the_cache():
    # TensorFlow's image tutorial: files shuffled once (reshuffle_each_iteration=False), decoded, shuffled again
    point = cache_point([FILES, FIXED_SHUFFLE, DECODE_FILES, ELEMENT_SHUFFLE, BATCH])
    assert point.stage is DECODE_FILES and point.frozen is None
    change = cache_change(point, CacheEstimate(DECODE_FILES.node, 3670, 2**16, 5.0), FACTS)
    assert change.applied and "order_change" not in change.details


def test_a_reshuffling_file_shuffle_is_passed_only_when_an_element_shuffle_follows_and_says_what_changes():
    point = cache_point([FILES, FILE_SHUFFLE, DECODE_FILES, ELEMENT_SHUFFLE, BATCH])
    assert point.stage is DECODE_FILES and point.frozen is FILE_SHUFFLE and point.element_shuffle is ELEMENT_SHUFFLE
    small = cache_change(point, CacheEstimate(DECODE_FILES.node, 3670, 2**16, 5.0), FACTS)
    assert small.applied
    assert small.details["order_change"] == (
        "the cache replays the order shuffle(1000) drew in the first epoch; later epochs are reordered only by "
        "shuffle(1000), which mixes within 1000 of the 3670 elements: what came late in the first epoch stays "
        "late-ish (the file order of later epochs no longer changes)")
    whole = cache_change(point, CacheEstimate(DECODE_FILES.node, 800, 2**16, 5.0), FACTS)
    assert whole.details["order_change"].endswith("whose buffer holds all 800 elements: every epoch is still a "
                                                  "uniformly random order, nothing changes")
    # only regrouping after the file shuffle: no work a cache could save
    assert cache_point([FILES, FILE_SHUFFLE, BATCH.__class__(**{**BATCH.to_dict(), "index": 2}),
                        ELEMENT_SHUFFLE]) is None
    # no element shuffle after the decode: a cache would freeze the order of every later epoch
    assert cache_point([FILES, FILE_SHUFFLE, DECODE_FILES, BATCH]) is None
    # deterministic work before the reshuffling shuffle: the cache goes there, the order is untouched
    point = cache_point([READ, PARSE, FILE_SHUFFLE.__class__(**{**FILE_SHUFFLE.to_dict(), "index": 2}), BATCH])
    assert point.stage is PARSE and point.frozen is None


def test_a_random_map_is_batched_first_only_when_its_draws_are_per_element():
    from pipediag.tuner.rules import vectorize_changes

    jitter = stage(1, "map", "MapDataset", function="jitter", is_random=True)
    batch = stage(2, "batch", "BatchDatasetV2", buffer_size=1024)
    stages = [stage(0, "source", "RangeDataset"), jitter, batch]
    (per_element,) = vectorize_changes(stages, draws={jitter.node: None})
    assert per_element.applied and per_element.details["draws"] == "per_element"
    (per_call,) = vectorize_changes(stages, draws={jitter.node: "it draws random numbers of a constant shape"})
    assert not per_call.applied and per_call.reason == "it draws random numbers of a constant shape"
    (unknown,) = vectorize_changes(stages)
    assert not unknown.applied and "one draw per batch" in unknown.reason


def test_image_dataset_from_directory_cached_after_its_decode_is_already_cached_there():
    # keras' image_dataset_from_directory: file paths zipped with labels and shuffled every epoch,
    # decoded, batched; the tutorial then caches and shuffles the batches. Nothing to cache again,
    # and no cache of the in-memory file list.
    paths = stage(0, "source", "TensorSliceDataset")
    zipped = stage(1, "zip", "ZipDataset")
    paths_shuffle = stage(2, "shuffle", "ShuffleDatasetV3", is_random=True, buffer_size=64)
    load = stage(3, "parallel_map", "ParallelMapDatasetV2", function="<lambda>")
    batch = stage(4, "batch", "BatchDatasetV2", buffer_size=8)
    fetch = stage(5, "prefetch", "PrefetchDataset")
    own = stage(6, "cache", "CacheDatasetV2")
    batches_shuffle = stage(7, "shuffle", "ShuffleDatasetV3", is_random=True, buffer_size=1000)
    point = cache_point([paths, zipped, paths_shuffle, load, batch, fetch, own, batches_shuffle])
    assert point.stage is batch and point.already_cached and point.frozen is paths_shuffle


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


def test_a_repeat_that_broadcasts_one_input_of_a_zip_does_not_end_the_cache_search():
    # keras.utils.timeseries_dataset_from_array: zip(from_tensors(array).repeat(), indices), a
    # parallel map gathering each window, zip with the targets, prefetch, batch; the user's repeat.
    stages = [
        stage(0, "source", "TensorDataset"),
        stage(1, "repeat", "RepeatDataset"),
        stage(2, "zip", "ZipDataset"),
        stage(3, "parallel_map", "ParallelMapDatasetV2", function="gather"),
        stage(4, "zip", "ZipDataset"),
        stage(5, "prefetch", "PrefetchDataset"),
        stage(6, "batch", "BatchDatasetV2", buffer_size=256),
        stage(7, "repeat", "RepeatDataset"),
    ]
    point = cache_point(stages)
    assert point is not None and point.stage.index == 6  # after the batch, before the epoch repeat


def test_an_epoch_repeat_still_ends_the_cache_search():
    stages = [
        stage(0, "source", "TFRecordDataset"),
        stage(1, "map", "MapDataset", function="parse"),
        stage(2, "repeat", "RepeatDataset"),
        stage(3, "batch", "BatchDatasetV2", buffer_size=32),
    ]
    point = cache_point(stages)
    assert point is not None and point.stage.index == 1
