"""The tuning rules on plain stages and numbers (no TensorFlow)."""

from pipediag.builder.stages import Stage
from pipediag.modes.tuning_rules import CacheEstimate, TuningFacts, cache_change, counting_verdict

FACTS = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=False)
DECODE = Stage(1, "MapDataset/_1", "MapDataset", "map", function="decode")


def test_a_counted_cache_that_fits_both_budgets_is_applied_and_says_it_was_counted():
    change = cache_change(DECODE, CacheEstimate("MapDataset/_1", 512, 196_608.0, 0.8, counted=True), FACTS)
    assert change.applied and change.details["elements_from"] == "one counting pass"
    assert change.description.endswith("512 elements, ~96 MiB, counted in one 0.8 s pass (TensorFlow does not know "
                                       "the length there)")


def test_a_count_that_failed_says_why():
    why = "its length is unknown, and one pass to count it did not end within 10 s (5 elements so far): ..."
    change = cache_change(DECODE, CacheEstimate("MapDataset/_1", None, 4.0, None, unknown_reason=why), FACTS)
    assert not change.applied and change.reason == why
    plain = cache_change(DECODE, CacheEstimate("MapDataset/_1", None, None, None), FACTS)
    assert plain.reason == "the pipeline is infinite or of unknown length at that point"


def test_counting_stops_at_the_ram_budget_first_then_at_the_time_budget():
    assert counting_verdict(100, 2**29, 1.0, False, FACTS) is None
    over = counting_verdict(100, 2**30 + 1, 11.0, False, FACTS)
    assert "passed the RAM budget of 1.0 GiB after 100 elements" in over and "snapshot" in over
    slow = counting_verdict(100, 2**20, 10.5, False, FACTS)
    assert "did not end within 10 s (100 elements so far)" in slow
    # A pass that ended, however slowly, has its answer; cache_change then judges its fill time.
    assert counting_verdict(100, 2**20, 10.5, True, FACTS) is None
    late = cache_change(DECODE, CacheEstimate("MapDataset/_1", 100, 2**14, 10.5, counted=True), FACTS)
    assert not late.applied and "longer than the 10 s" in late.reason
