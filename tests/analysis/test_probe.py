"""What fresh reads of the pipeline's prefixes say, on scripted readings (no TensorFlow, no clock)."""

import pytest

from pipediag.analysis.probe import FILL_MARGIN, FILLING_CAP_S, Finding, early_word, fill_s, keep_waiting_s, read
from pipediag.records.stall import PrefixReading

SOURCE = PrefixReading("RangeDataset", "yields", elements=20_000, seconds=1.0)
MAP = PrefixReading("map(read)", "yields", elements=150, seconds=1.0)


def test_a_buffer_needs_its_size_in_elements_of_the_stage_before():
    assert fill_s("shuffle", 10_000, 100.0) == pytest.approx(100.0)
    assert fill_s("batch", 8, 100.0) == pytest.approx(0.08)
    assert fill_s("map", 10_000, 100.0) is None  # no buffer
    assert fill_s("shuffle", 10_000, None) is None  # no rate known
    assert fill_s("shuffle", None, 100.0) is None


def test_the_first_prefix_that_gives_nothing_names_the_stage():
    finding = read([SOURCE, PrefixReading("map(hang)", "nothing", seconds=5.0)])
    assert finding == Finding("map(hang)", None, None)
    assert read([SOURCE, PrefixReading("map(hang)", "stopped", elements=40)]).stage == "map(hang)"
    word = early_word(finding, 30.0)
    assert word.startswith("no first batch after 30 s: map(hang) gives nothing") and "before it yield" in word


def test_a_shuffle_seen_filling_is_not_a_stall():
    filling = PrefixReading("shuffle(100000)", "filling", fill_s=666.7)
    finding = read([SOURCE, MAP, filling])
    assert finding.stage is None and finding.filling == filling
    assert "shuffle(100000) was filling its buffer (~667 s at the 150 elements/s map(read) yields)" in finding.reason
    assert early_word(finding, 30.0) == "no first batch after 30 s: shuffle(100000) is filling its buffer, ~667 s"


def test_every_prefix_yielding_or_one_failing_names_no_stage_and_says_why():
    yielded = read([SOURCE, MAP])
    assert yielded.stage is None and yielded.reason.startswith("every stage's prefix yielded when read fresh")
    assert early_word(yielded, 30.0) == "no first batch after 30 s, yet every stage yields when read fresh"
    failed = read([SOURCE, PrefixReading("cache", "failed", reason="AlreadyExistsError: cache file in use")])
    assert failed.stage is None and failed.reason == "reading the pipeline up to cache failed: AlreadyExistsError: cache file in use"
    assert read([]).reason == "no stage of the pipeline could be read"


def test_a_buffer_seen_filling_moves_pipediags_deadline_but_never_the_users():
    filling = read([SOURCE, PrefixReading("shuffle(20000)", "filling", fill_s=100.0)])
    assert keep_waiting_s(filling, 30.0, 120.0, fixed=False) == 30.0 + FILL_MARGIN * 100.0
    assert keep_waiting_s(filling, 30.0, 120.0, fixed=True) == 120.0  # --stall-timeout, as given
    endless = read([PrefixReading("shuffle(10000000)", "filling", fill_s=1e6)])
    assert keep_waiting_s(endless, 30.0, 120.0, fixed=False) == FILLING_CAP_S
    quick = read([PrefixReading("shuffle(100)", "filling", fill_s=6.0)])
    assert keep_waiting_s(quick, 30.0, 120.0, fixed=False) == 120.0  # never shorter than the deadline
    stalled = read([SOURCE, PrefixReading("map(hang)", "nothing", seconds=5.0)])
    assert keep_waiting_s(stalled, 30.0, 120.0, fixed=False) == 120.0  # a true stall ends on time
