"""The tuned pipeline: the user's graph rewritten, measured safe, caches filled and bounded."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.tuner.rewrite import build, plan_tuning, tune  # noqa: E402
from pipediag.tuner.rules import TuningFacts  # noqa: E402

FACTS = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=False)


def noisy(x):
    return tf.cast(x, tf.float32) + tf.random.uniform([], maxval=0.0)  # a random op that adds nothing


def decode(x):
    return tf.cast(x, tf.float32) * 3.0


def applied(tuned):
    return [(c.kind, c.stage) for c in tuned.changes if c.applied]


def test_random_serial_map_becomes_parallel_and_keeps_order():
    ds = tf.data.Dataset.range(64).map(noisy).batch(8)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    assert ("parallel_map", "map(noisy)") in applied(tuned)
    stages = PipelineGraph.from_dataset(tuned.dataset).stages()
    assert [s.kind for s in stages] == ["source", "parallel_map", "batch", "prefetch", "options"]
    assert [b.tolist() for b in tuned.dataset.as_numpy_iterator()] == [b.tolist() for b in ds.as_numpy_iterator()]


def test_stateless_map_is_left_to_tensorflow():
    tuned = tune(tf.data.Dataset.range(8).map(decode).batch(4), FACTS, input_batches_per_sec=100)
    change = next(c for c in tuned.changes if c.kind == "parallel_map")
    assert not change.applied and "map_parallelization" in change.reason


def test_cache_goes_before_the_first_random_stage_and_is_filled():
    ds = tf.data.Dataset.range(64).map(decode).map(noisy).batch(8)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    cache = next(c for c in tuned.changes if c.kind == "cache")
    assert cache.applied and cache.stage == "map(decode)"
    assert cache.details["elements"] == 64 and cache.details["estimated_bytes"] == 64 * 4
    assert tuned.cache_fill_ns > 0
    kinds = [s.kind for s in PipelineGraph.from_dataset(tuned.dataset).stages()]
    assert kinds == ["source", "map", "cache", "parallel_map", "batch", "prefetch", "options"]
    assert [b.tolist() for b in tuned.dataset.as_numpy_iterator()] == [b.tolist() for b in ds.as_numpy_iterator()]


def test_cache_over_budget_is_left_out_with_a_snapshot_hint():
    ds = tf.data.Dataset.range(1000).map(decode).batch(8)
    small = TuningFacts(cores=2, ram_budget_bytes=100, fill_budget_seconds=10, latency_bound=False)
    cache = next(c for c in tune(ds, small, input_batches_per_sec=100).changes if c.kind == "cache")
    assert not cache.applied and "snapshot" in cache.reason


def test_cache_goes_before_a_repeat_the_canonical_place():
    ds = tf.data.Dataset.range(10).map(decode).repeat().batch(4)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    cache = next(c for c in tuned.changes if c.kind == "cache")
    assert cache.applied and cache.details["elements"] == 10
    kinds = [s.kind for s in PipelineGraph.from_dataset(tuned.dataset).stages()]
    assert kinds[:4] == ["source", "map", "cache", "repeat"]


def double(x):
    return x * 2.0


def test_a_pipeline_that_caches_early_gets_its_cache_after_the_later_stages_and_their_prefetch():
    ds = tf.data.Dataset.range(64).map(decode).cache().map(double).prefetch(2).map(noisy).batch(8)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    cache = next(c for c in tuned.changes if c.kind == "cache")
    assert cache.applied and cache.stage == "map(double)" and "own cache comes earlier" in cache.description
    kinds = [s.kind for s in PipelineGraph.from_dataset(tuned.dataset).stages()]
    assert kinds == ["source", "map", "cache", "map", "prefetch", "cache", "parallel_map", "batch", "prefetch", "options"]
    assert [b.tolist() for b in tuned.dataset.as_numpy_iterator()] == [b.tolist() for b in ds.as_numpy_iterator()]


def test_a_pipeline_already_cached_at_the_deepest_point_is_not_cached_twice():
    ds = tf.data.Dataset.range(64).map(decode).cache().map(noisy).batch(8)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    cache = next(c for c in tuned.changes if c.kind == "cache")
    assert not cache.applied and cache.reason == "the pipeline already caches there (cache right after map(decode))"
    assert [s.kind for s in PipelineGraph.from_dataset(tuned.dataset).stages()].count("cache") == 1


def test_an_endless_repeat_before_a_deterministic_map_moves_after_the_cache():
    # Issue 25: the data before the repeat is finite, so `repeat().map(f)` -> `map(f).cache().repeat()`
    # (tests/tuner/test_cache_repeat.py has the JPEG case).
    # Batch-before-map stays a candidate beside it (for a cheap map it is the gain): the ablation
    # measures each alone; together, the batch moved first leaves the cache out.
    ds = tf.data.Dataset.range(10).repeat().map(decode).batch(4)
    plan = plan_tuning(ds, FACTS, input_batches_per_sec=100)
    cache = next(c for c in plan.changes if c.kind == "cache")
    assert cache.applied and cache.details["repeat_stage"] == "repeat" and cache.details["elements"] == 10
    assert next(c for c in plan.changes if c.kind == "vectorize_map").applied
    alone = build(plan, [cache.key])
    assert [s.kind for s in PipelineGraph.from_dataset(alone.dataset).stages()][:4] == ["source", "map", "cache", "repeat"]
    assert [b.tolist() for b in alone.dataset.take(7).as_numpy_iterator()] == [
        b.tolist() for b in ds.take(7).as_numpy_iterator()]
    together = build(plan, [c.key for c in plan.candidates])
    assert not next(c for c in together.changes if c.kind == "cache").applied


def test_no_cache_past_a_repeat_before_a_random_map():
    ds = tf.data.Dataset.range(10).repeat().map(noisy).batch(4)
    assert [c for c in tune(ds, FACTS, input_batches_per_sec=100).changes if c.kind == "cache"] == []


def keep(x):
    return x >= 0


def test_a_cache_where_the_length_is_unknown_is_counted_in_one_pass_first():
    ds = tf.data.Dataset.range(64).filter(keep).map(decode).map(noisy).batch(8)
    assert ds.cardinality() == tf.data.UNKNOWN_CARDINALITY
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    cache = next(c for c in tuned.changes if c.kind == "cache")
    assert cache.applied and cache.stage == "map(decode)", cache
    assert cache.details["elements"] == 64 and cache.details["estimated_bytes"] == 64 * 4
    assert cache.details["elements_from"] == "one counting pass" and cache.details["estimated_fill_seconds"] > 0
    assert "counted in one" in cache.description
    assert [b.tolist() for b in tuned.dataset.as_numpy_iterator()] == [b.tolist() for b in ds.as_numpy_iterator()]


def test_a_counting_pass_stops_at_the_ram_budget_and_points_at_snapshot():
    ds = tf.data.Dataset.range(100_000).filter(keep).map(decode).map(noisy).batch(8)
    small = TuningFacts(cores=2, ram_budget_bytes=4096, fill_budget_seconds=10, latency_bound=False)
    cache = next(c for c in tune(ds, small, input_batches_per_sec=100).changes if c.kind == "cache")
    assert not cache.applied and "passed the RAM budget" in cache.reason and "snapshot" in cache.reason


def test_a_counting_pass_stops_at_the_time_budget():
    ds = tf.data.Dataset.range(10**12).filter(keep).map(decode).map(noisy).batch(8)  # as good as endless
    quick = TuningFacts(cores=2, ram_budget_bytes=2**40, fill_budget_seconds=0.3, latency_bound=False)
    cache = next(c for c in tune(ds, quick, input_batches_per_sec=100).changes if c.kind == "cache")
    assert not cache.applied
    assert cache.reason.startswith("its length is unknown, and one pass to count it did not end within 0.3 s")


def test_serial_interleave_becomes_parallel_with_the_same_order():
    ds = tf.data.Dataset.range(4).interleave(lambda i: tf.data.Dataset.range(i * 10, i * 10 + 3), cycle_length=2)
    tuned = tune(ds.batch(4), FACTS, input_batches_per_sec=100)
    assert ("interleave", "interleave(<lambda>)") in applied(tuned)
    assert [b.tolist() for b in tuned.dataset.as_numpy_iterator()] == [b.tolist() for b in ds.batch(4).as_numpy_iterator()]


def test_files_read_one_by_one_are_interleaved_only_when_shuffled(tmp_path):
    paths = []
    for i in range(4):
        path = str(tmp_path / f"part-{i}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for j in range(5):
                w.write(f"{i}-{j}".encode())
        paths.append(path)
    plain = tf.data.TFRecordDataset(paths).batch(5)
    change = next(c for c in tune(plain, FACTS, input_batches_per_sec=100).changes if c.kind == "interleave")
    assert not change.applied and "order" in change.reason

    shuffled = tf.data.TFRecordDataset(paths).shuffle(20).batch(5)
    tuned = tune(shuffled, FACTS, input_batches_per_sec=100)
    change = next(c for c in tuned.changes if c.kind == "interleave")
    assert change.applied and change.details["files"] == 4
    records = sorted(r for b in tuned.dataset.as_numpy_iterator() for r in b.tolist())
    assert records == sorted(f"{i}-{j}".encode() for i in range(4) for j in range(5))


def test_latency_bound_pipelines_get_a_bigger_threadpool():
    latency = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=True)
    tuned = tune(tf.data.Dataset.range(8).batch(4), latency, input_batches_per_sec=100)
    assert ("threading", None) in applied(tuned)
    assert tuned.dataset.options().threading.private_threadpool_size == 32


def test_pipeline_ending_in_prefetch_gets_no_second_one():
    tuned = tune(tf.data.Dataset.range(8).batch(4).prefetch(1), FACTS, input_batches_per_sec=100)
    prefetch = next(c for c in tuned.changes if c.kind == "prefetch")
    assert not prefetch.applied


def test_dataset_with_numpy_shaped_elements():
    ds = tf.data.Dataset.from_tensor_slices(np.zeros((16, 3), "float32")).map(noisy).batch(4)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    assert next(iter(tuned.dataset)).shape == (4, 3)


def normalize(x):
    return tf.cast(x, tf.float32) / 255.0 - 0.5


def fraction_of_total(x):
    """Not element-wise: on a batch it divides by the batch's sum, not the element's."""
    x = tf.cast(x, tf.float32) + 1.0
    return x / tf.reduce_sum(x)


def vectorize_change(changes):
    return next(c for c in changes if c.kind == "vectorize_map")


def test_element_wise_map_before_batch_is_moved_after_it_and_checked():
    ds = tf.data.Dataset.range(1000).repeat().map(normalize).batch(16)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    change = vectorize_change(tuned.changes)
    assert change.applied and change.stage == "map(normalize)" and change.details["batch_size"] == 16
    assert change.details["check"] == "checked on the first 3 batch(es) of real input: identical values"
    kinds = [s.label for s in PipelineGraph.from_dataset(tuned.dataset).stages()]
    assert kinds[:4] == ["RangeDataset", "repeat", "batch(16)", "parallel_map(normalize)"]
    got = list(tuned.dataset.take(5).as_numpy_iterator())
    want = list(ds.take(5).as_numpy_iterator())
    assert all(np.array_equal(a, b) for a, b in zip(got, want))


def test_a_map_that_is_not_element_wise_is_not_vectorized():
    ds = tf.data.Dataset.range(1000).repeat().map(fraction_of_total).batch(8)
    change = vectorize_change(tune(ds, FACTS, input_batches_per_sec=100).changes)
    assert not change.applied and "different values than element by element" in change.reason


def test_a_map_that_cannot_take_a_batch_is_not_vectorized():
    ds = tf.data.Dataset.range(1000).repeat().map(lambda x: tf.reshape(tf.cast(x, tf.float32), [1])).batch(8)
    change = vectorize_change(tune(ds, FACTS, input_batches_per_sec=100).changes)
    assert not change.applied
    assert "differently shaped" in change.reason or "does not accept a batch" in change.reason


def test_random_and_python_maps_are_not_vectorized():
    random = vectorize_change(tune(tf.data.Dataset.range(64).repeat().map(noisy).batch(8), FACTS,
                                   input_batches_per_sec=100).changes)
    assert not random.applied and "random" in random.reason


def test_plan_then_build_any_subset():
    from pipediag.tuner.rewrite import build, plan_tuning

    ds = tf.data.Dataset.range(64).repeat().map(noisy).batch(8)
    plan = plan_tuning(ds, FACTS, input_batches_per_sec=100)
    assert [c.kind for c in plan.candidates] == ["parallel_map", "prefetch"]
    only_prefetch = build(plan, [plan.candidates[1].key])
    assert [(c.kind, c.applied) for c in only_prefetch.changes if c.kind in ("parallel_map", "prefetch")] == [
        ("parallel_map", False), ("prefetch", True)]
    assert [s.kind for s in PipelineGraph.from_dataset(only_prefetch.dataset).stages()] == [
        "source", "repeat", "map", "batch", "prefetch", "options"]


INJECTED = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=False,
                       prefetch_injected=True)


def test_no_explicit_prefetch_where_tensorflow_injects_one():
    tuned = tune(tf.data.Dataset.range(64).map(noisy).batch(8), INJECTED, input_batches_per_sec=100)
    prefetch = next(c for c in tuned.changes if c.kind == "prefetch")
    assert not prefetch.applied and "inject_prefetch" in prefetch.reason
    assert "prefetch" not in [s.kind for s in PipelineGraph.from_dataset(tuned.dataset).stages()]


def test_a_prefetch_where_the_pipeline_ends_asynchronously_or_injection_is_off():
    from pipediag.tuner.rewrite import prefetch_injected

    ends_parallel = tf.data.Dataset.range(64).batch(8).map(noisy, num_parallel_calls=2)
    assert next(c for c in tune(ends_parallel, INJECTED, input_batches_per_sec=100).changes
                if c.kind == "prefetch").applied
    options = tf.data.Options()
    assert prefetch_injected(options)
    options.experimental_optimization.inject_prefetch = False
    assert not prefetch_injected(options)
    options = tf.data.Options()
    options.autotune.enabled = False
    assert not prefetch_injected(options)


def test_a_cache_goes_past_a_shuffle_that_does_not_reshuffle_and_gives_the_same_epochs():
    ds = tf.data.Dataset.range(64).shuffle(64, seed=5, reshuffle_each_iteration=False).map(decode).batch(8)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    cache = next(c for c in tuned.changes if c.kind == "cache")
    assert cache.applied and cache.stage == "batch(8)"
    first, second = list(tuned.dataset.as_numpy_iterator()), list(tuned.dataset.as_numpy_iterator())
    original = list(ds.as_numpy_iterator())
    assert [b.tolist() for b in first] == [b.tolist() for b in second] == [b.tolist() for b in original]


def test_a_cache_past_a_file_shuffle_keeps_the_element_shuffle_after_it_and_says_what_changes():
    ds = tf.data.Dataset.range(64).shuffle(64).map(decode).shuffle(16).batch(8)
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    cache = next(c for c in tuned.changes if c.kind == "cache")
    assert cache.applied and cache.stage == "map(decode)"
    assert "mixes within 16 of the 64 elements" in cache.details["order_change"]
    kinds = [s.kind for s in PipelineGraph.from_dataset(tuned.dataset).stages()]
    assert kinds == ["source", "shuffle", "map", "cache", "shuffle", "batch", "prefetch", "options"]
    epochs = [sorted(np.concatenate(list(tuned.dataset.as_numpy_iterator())).tolist()) for _ in range(2)]
    assert epochs[0] == epochs[1] == [3.0 * i for i in range(64)]


def scalar_jitter(x):
    return tf.cast(x, tf.float32) + tf.random.uniform(tf.shape(x), -0.5, 0.5)


def jitter_with_label(x):
    return tf.cast(x, tf.float32) + tf.random.uniform(tf.shape(x)), x * 3


def flip(x):
    return tf.image.random_flip_left_right(tf.fill([2, 2, 1], tf.cast(x, tf.float32)))


def test_a_map_whose_draws_follow_its_input_is_batched_first_and_checked():
    # issue 13: jitter on scalar elements before batch(1024) was refused for drawing random numbers
    ds = tf.data.Dataset.range(4096).repeat().map(scalar_jitter).batch(1024)
    change = vectorize_change(tune(ds, FACTS, input_batches_per_sec=100).changes)
    assert change.applied and change.details["draws"] == "per_element"
    assert change.details["check"].startswith("checked on the first 3 batch(es) of real input: draws shaped like the "
                                              "input (one per element either way); 1 of 1 output(s) differ")
    tuned = tune(ds, FACTS, input_batches_per_sec=100)
    first = next(iter(tuned.dataset)).numpy()
    assert first.shape == (1024,) and len(set((first - range(1024)).round(6).tolist())) > 1000  # one draw per element


def test_the_parts_a_draw_does_not_reach_must_equal_and_per_call_draws_stay_refused():
    ds = tf.data.Dataset.range(1000).repeat().map(jitter_with_label).batch(16)
    change = vectorize_change(tune(ds, FACTS, input_batches_per_sec=100).changes)
    assert change.applied and change.details["check"].endswith("the other 1 equal the element-wise values")
    ds = tf.data.Dataset.range(1000).repeat().map(flip).batch(16)
    change = vectorize_change(tune(ds, FACTS, input_batches_per_sec=100).changes)
    assert not change.applied and "one draw per call" in change.reason


def test_a_plan_read_that_hangs_raises_stalled_under_the_watchdog():
    """The vectorize check reads the map's input fresh; here that input hangs from its 10th element."""
    import threading

    from pipediag.modes.watchdog import Watchdog
    from pipediag.records.stall import Stalled
    from pipediag.tuner.rewrite import plan_tuning

    release = threading.Event()

    def read(x):
        if int(x) >= 10:
            release.wait()  # a read that hangs until the test ends
        return x

    ds = tf.data.Dataset.range(1000).map(lambda x: tf.py_function(read, [x], tf.int64)).map(lambda x: x * 2).batch(8)
    asked = []

    def reads(fn, what, budget_s):
        asked.append((what, budget_s))
        return Watchdog().call(fn, what, 1.0, fits=False)  # the test's own short deadline

    try:
        with pytest.raises(Stalled, match="tuning: checking map"):
            plan_tuning(ds, FACTS, input_batches_per_sec=100, reads=reads)
    finally:
        release.set()
    assert asked == [("tuning: checking map(<lambda>) on whole batches", 15.0)]
