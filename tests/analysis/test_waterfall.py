"""The waterfall's units and the choice of the slow stage, on plain numbers."""

import pytest

from pipediag.analysis.waterfall import (
    MIN_SHARE,
    Anatomy,
    StageTiming,
    build_anatomy,
    deep_enough,
    elements_per_batch,
    is_stable,
    rate,
    timing_plan,
)
from pipediag.records.stage import Stage


def stage(index, kind, op="X", **kw):
    return Stage(index, f"node_{index}", op, kind, **kw)


SOURCE = stage(0, "source", "RangeDataset")
DECODE = stage(1, "map", "MapDataset", function="decode", parallelism=1)
AUGMENT = stage(2, "map", "MapDataset", function="augment", parallelism=1)
BATCH = stage(3, "batch", "BatchDatasetV2", buffer_size=32)
PREFETCH = stage(4, "prefetch", "PrefetchDataset", buffer_size=-1)
PIPELINE = [SOURCE, DECODE, AUGMENT, BATCH, PREFETCH]


def timing(index, per_sec, chunks=8, jitter=0.02, per_chunk=100):
    """Chunks of `per_chunk` elements at `per_sec`, alternating ± jitter."""
    ns = [int(per_chunk / per_sec * 1e9 * (1 + (jitter if i % 2 else -jitter))) for i in range(chunks)]
    return StageTiming(index, chunk_elements=(per_chunk,) * chunks, chunk_ns=tuple(ns), stop_reason="stable")


def test_elements_per_batch_multiplies_batch_sizes_upstream():
    assert [f for f, _ in elements_per_batch(PIPELINE)] == [32, 32, 32, 1, 1]


def test_a_stage_that_changes_the_count_makes_upstream_incomparable():
    stages = [SOURCE, stage(1, "filter", "FilterDataset", function="keep"), stage(2, "batch", "BatchDatasetV2", buffer_size=8)]
    factors = elements_per_batch(stages)
    assert factors[2] == (1, None) and factors[1] == (8, None)
    assert factors[0][0] is None and "filter(keep) changes how many elements there are" in factors[0][1]
    plan = timing_plan(stages)
    assert plan[1] is None and plan[2] is None
    assert plan[0].startswith("not comparable")


def test_batch_size_from_the_first_batch_when_not_a_constant():
    stages = [SOURCE, stage(1, "batch", "BatchDatasetV2")]
    assert elements_per_batch(stages, batch_size=16)[0] == (16, None)
    assert elements_per_batch(stages)[0][0] is None


def test_buffers_are_not_timed():
    assert timing_plan(PIPELINE)[4] == "not timed: prefetch does no work of its own"


def test_rate_and_its_interval():
    value, ci = rate((100, 100, 100, 100), (10**8, 10**8, 10**8, 10**8))
    assert value == pytest.approx(1000.0)
    assert ci == pytest.approx((1000.0, 1000.0))
    assert rate((), ()) == (None, None)
    assert is_stable(*_chunks(timing(0, 1000.0)))
    assert not is_stable(*_chunks(timing(0, 1000.0, chunks=4)))  # too few chunks
    assert not is_stable(*_chunks(timing(0, 1000.0, jitter=0.5)))  # too noisy


def _chunks(t):
    return t.chunk_elements, t.chunk_ns


def test_the_stage_that_adds_most_time_per_batch_is_the_slow_stage():
    # Elements/s: source 100k, decode 2000 (the slow one), augment 1900, batch 59 batches/s.
    timings = {0: timing(0, 100_000), 1: timing(1, 2000), 2: timing(2, 1900), 3: timing(3, 59, per_chunk=2)}
    a = build_anatomy(PIPELINE, timings)
    assert a.bottleneck_stage == "map(decode)" and a.bottleneck_index == 1
    rows = {r.index: r for r in a.rows}
    assert rows[1].unit == "elements" and rows[3].unit == "batches"
    assert rows[1].batches_per_sec == pytest.approx(2000 / 32)
    assert rows[1].added_ms_per_batch == pytest.approx(1000 * 32 / 2000 - 1000 * 32 / 100_000)
    assert rows[1].share > MIN_SHARE
    assert rows[4].batches_per_sec is None and rows[4].reason.startswith("not timed")
    assert "elements/s ÷ 32" in a.unit_note
    assert "adds" in a.reason and "map(decode)" in a.reason


def test_a_fall_in_elements_per_second_is_weighed_in_time_not_in_rate():
    # 100k -> 50k elements/s loses more elements/s than 2000 -> 1000, but adds far less time.
    stages = [SOURCE, DECODE, AUGMENT, stage(3, "batch", "BatchDatasetV2", buffer_size=32)]
    timings = {0: timing(0, 100_000), 1: timing(1, 50_000), 2: timing(2, 1000), 3: timing(3, 31, per_chunk=2)}
    assert build_anatomy(stages, timings).bottleneck_stage == "map(augment)"


def test_no_stage_named_when_the_time_is_spread():
    maps = [stage(i, "map", "MapDataset", function=f"f{i}") for i in range(1, 6)]
    stages = [SOURCE] + maps + [stage(6, "batch", "BatchDatasetV2", buffer_size=10)]
    # Each map adds about the same time: rates 5000, 2500, 1667, 1250, 1000 elements/s.
    timings = {0: timing(0, 10**6)}
    for i in range(1, 6):
        timings[i] = timing(i, 5000 / i)
    timings[6] = timing(6, 100, per_chunk=2)
    a = build_anatomy(stages, timings)
    assert a.bottleneck_stage is None and a.reason.startswith("no single stage stands out")


def test_no_stage_named_when_the_fall_is_within_the_noise():
    # augment adds the most time (1.2 vs 1.0 ms), but its noisy rate overlaps decode's.
    stages = [SOURCE, DECODE, AUGMENT]
    timings = {0: timing(0, 10**6), 1: timing(1, 1000, jitter=0.5), 2: timing(2, 450, jitter=0.5)}
    a = build_anatomy(stages, timings)
    assert a.bottleneck_stage is None and "not clearly below" in a.reason


def test_a_close_runner_up_is_named():
    stages = [SOURCE, DECODE, AUGMENT, stage(3, "batch", "BatchDatasetV2", buffer_size=1)]
    timings = {0: timing(0, 10**6), 1: timing(1, 200), 2: timing(2, 95), 3: timing(3, 94)}
    a = build_anatomy(stages, timings)
    assert a.bottleneck_stage == "map(augment)"
    assert a.notes and a.notes[0].startswith("map(decode) adds nearly as much")


def test_nothing_timed():
    a = build_anatomy([SOURCE], {0: StageTiming(0, reason="could not rebuild")})
    assert a.bottleneck_stage is None and a.reason == "no stage could be timed"
    assert a.rows[0].reason == "could not rebuild"


def test_round_trip():
    timings = {0: timing(0, 100_000), 1: timing(1, 2000), 2: timing(2, 1900), 3: timing(3, 59, per_chunk=2)}
    a = build_anatomy(PIPELINE, timings, seconds=1.5)
    assert Anatomy.from_dict(a.to_dict()) == a


def test_stages_before_a_cache_that_replays_are_paid_once_and_not_ranked():
    # tensorflow-datasets' autocache: decode, cache, then the user's augmentation. The decode's cost
    # is the first epoch's only; the augmentation costs every batch.
    cache = stage(2, "cache", "CacheDatasetV2")
    augment = stage(3, "map", "MapDataset", function="augment", parallelism=1)
    batch = stage(4, "batch", "BatchDatasetV2", buffer_size=32)
    pipeline = [SOURCE, DECODE, cache, augment, batch]
    timings = {0: timing(0, 100_000), 1: timing(1, 1800), 2: timing(2, 30_000), 3: timing(3, 2000),
               4: timing(4, 60, per_chunk=2)}
    a = build_anatomy(pipeline, timings)
    assert a.bottleneck_stage == "map(augment)"
    assert any("map(decode)" in n and "paid once" in n for n in a.notes)
    # behind a repeat the cache never finishes filling: the decode is ranked as before
    repeat = stage(1, "repeat", "RepeatDataset")
    decode, cache2, augment2, batch2 = (stage(2, "map", "MapDataset", function="decode", parallelism=1),
                                        stage(3, "cache", "CacheDatasetV2"),
                                        stage(4, "map", "MapDataset", function="augment", parallelism=1),
                                        stage(5, "batch", "BatchDatasetV2", buffer_size=32))
    timings = {0: timing(0, 100_000), 2: timing(2, 1000), 3: timing(3, 30_000), 4: timing(4, 2000),
               5: timing(5, 60, per_chunk=2)}
    assert build_anatomy([SOURCE, repeat, decode, cache2, augment2, batch2], timings).bottleneck_stage == "map(decode)"


def test_the_cuts_after_a_stage_as_slow_as_the_whole_pipeline_are_not_needed():
    # Timed so far: batch (the whole pipeline, 59 batches/s = 16.9 ms), then source and decode from
    # the start (decode 2000 elements/s = 16 ms per batch of 32, 95% of the whole, adding 15.7 ms).
    timings = {3: timing(3, 59, per_chunk=2), 0: timing(0, 100_000), 1: timing(1, 2000)}
    why = deep_enough(PIPELINE, timings, final_index=3)
    assert why is not None and why.startswith("not timed: the pipeline up to map(decode) already took 16.0 ms")
    assert "map(decode) adds 93%" in why and "--thorough" in why
    # The augment, had it been timed at decode's rate, adds nothing: the same stage is named.
    timings[2] = timing(2, 2000)
    assert build_anatomy(PIPELINE, timings).bottleneck_stage == "map(decode)"


def test_the_cuts_go_on_while_the_stages_timed_leave_room_for_a_later_one():
    batch = timing(3, 59, per_chunk=2)  # 16.9 ms per batch
    # decode takes 60% of the whole pipeline's time: the augment may add the other 40%
    assert deep_enough(PIPELINE, {3: batch, 0: timing(0, 100_000), 1: timing(1, 3150)}, final_index=3) is None
    # as slow as the whole (92%), but no one stage adds half of it (source 7.6 ms, 45%; decode 8.0
    # ms more, 47%): the rule asks for both, and goes on
    spread = {3: batch, 0: timing(0, 4200), 1: timing(1, 2050)}
    assert deep_enough(PIPELINE, spread, final_index=3) is None
    # only the whole pipeline timed, or nothing comparable
    assert deep_enough(PIPELINE, {3: batch}, final_index=3) is None
    assert deep_enough(PIPELINE, {0: timing(0, 2000)}, final_index=3) is None


def test_never_before_a_cache_that_replays():
    # The stages before the cache are not ranked (paid once): one of them as slow as the whole
    # pipeline says nothing about the stages after the cache.
    cache = stage(2, "cache", "CacheDatasetV2")
    batch = stage(3, "batch", "BatchDatasetV2", buffer_size=32)
    pipeline = [SOURCE, DECODE, cache, batch]
    timings = {3: timing(3, 59, per_chunk=2), 0: timing(0, 100_000), 1: timing(1, 1800)}
    assert deep_enough(pipeline, timings, final_index=3) is None
