"""Interleaved rounds with a fake clock: no TensorFlow, no sleeping."""

import random
import sys

import pytest

from pipediag.analysis.compare import LookPlan
from pipediag.modes.compare import ComparePlan, Side, chunk_rates, run_rounds
from pipediag.modes.runner import run_mode
from pipediag.records.run import StopRule
from pipediag.verdict.compare import is_clear
from tests.clocks import FakeClock


def feed(clock, ms, jitter=0.0, rng=None):
    rng = rng or random.Random(0)

    def next_batch():
        clock.advance(ms * (1 + rng.uniform(-jitter, jitter)))
        return "batch"

    return next_batch


class PrefetchingFeed:
    """A producer that keeps working in the background into a buffer of `capacity` batches, as
    a pipeline ending in prefetch does, also while the other side has its turn, unless its
    iterator is dropped (`stop`, a BatchFeed's close): then it starts afresh on the next pull."""

    def __init__(self, clock, produce_ms, capacity):
        self.clock, self.produce_ns, self.capacity = clock, int(produce_ms * 1e6), capacity
        self.buffer = 0
        self.next_ready = clock() + self.produce_ns
        self.stopped = False
        self.stops = 0

    def stop(self):
        self.buffer, self.stopped = 0, True
        self.stops += 1

    def _catch_up(self):
        while self.buffer < self.capacity and self.next_ready <= self.clock():
            self.buffer += 1
            self.next_ready += self.produce_ns
        if self.buffer == self.capacity:
            self.next_ready = max(self.next_ready, self.clock())  # blocked: resumes on the next pull

    def __call__(self):
        if self.stopped:
            self.stopped, self.next_ready = False, self.clock() + self.produce_ns
        self._catch_up()
        if self.buffer == self.capacity:
            self.next_ready = self.clock() + self.produce_ns
        if self.buffer > 0:
            self.buffer -= 1
            self.clock.advance(0.05)
        else:
            self.clock.ns = self.next_ready
            self.next_ready += self.produce_ns
        return "batch"


def stepper(clock, ms):
    def step(batch):
        clock.advance(ms)

    return step


def clear(iv):
    return is_clear(iv, equivalence=0.05)


def test_a_faster_side_is_found_at_the_first_look_with_alternating_order():
    clock = FakeClock()
    rng = random.Random(1)
    result = run_rounds(Side("A", feed(clock, 10, 0.05, rng)), Side("B", feed(clock, 5, 0.05, rng)),
                        stepper(clock, 2), ComparePlan(), clear=clear, clock_ns=clock)
    assert result.stop_reason == "clear" and len(result.rounds) == 4
    assert [r.order for r in result.rounds] == ["AB", "BA", "AB", "BA"]
    fed, alone = result.intervals["fed"], result.intervals["input_only"]
    assert fed.low < 12 / 7 < fed.high and alone.low < 2.0 < alone.high
    probes = [s for s in result.segments if s.round == -1]
    assert {(s.side, s.kind) for s in probes} == {("A", "fed"), ("B", "fed"), ("A", "input_only"), ("B", "input_only")}
    first_a = next(s for s in probes if s.side == "A" and s.kind == "fed")
    assert first_a.run.first_step_ns is not None  # the compile step is kept apart
    assert len(result.segments) == 4 + 4 * 4


def test_identical_sides_are_not_significantly_different():
    clock = FakeClock()
    rng = random.Random(2)
    result = run_rounds(Side("A", feed(clock, 10, 0.3, rng)), Side("B", feed(clock, 10, 0.3, rng)),
                        stepper(clock, 2), ComparePlan(), clear=clear, clock_ns=clock)
    fed = result.intervals["fed"]
    assert fed.low <= 1.0 <= fed.high


def test_the_time_cap_holds_and_is_said():
    clock = FakeClock()
    rng = random.Random(3)
    plan = ComparePlan(max_seconds=8.0)
    result = run_rounds(Side("A", feed(clock, 10, 0.5, rng)), Side("B", feed(clock, 10, 0.5, rng)),
                        stepper(clock, 2), plan, clear=lambda iv: False, clock_ns=clock)
    assert result.stop_reason == "time_cap"
    assert clock.ns / 1e9 <= 8.0 * 1.1  # a round is never started when it would end far past the cap
    assert 1 <= len(result.rounds) < 4


def test_the_round_cap_holds():
    clock = FakeClock()
    plan = ComparePlan(looks=LookPlan(max_rounds=5), max_seconds=1000, segment_seconds=0.1, probe_seconds=0.1)
    result = run_rounds(Side("A", feed(clock, 1)), Side("B", feed(clock, 1)), stepper(clock, 1), plan,
                        clear=lambda iv: False, clock_ns=clock)
    assert result.stop_reason == "round_cap" and len(result.rounds) == 5
    assert result.looks_taken == 2  # looks at 4 and 5


def test_each_turn_ends_the_sides_iterator_so_nothing_is_stocked_for_free():
    """B stocks up to 20 batches while it idles; its iterator is dropped after every turn, so its
    timed batches are made in its own turn at its steady 100 batches/s."""
    clock = FakeClock()
    b_feed = PrefetchingFeed(clock, produce_ms=10, capacity=20)
    result = run_rounds(Side("A", feed(clock, 10)), Side("B", b_feed, end_turn=b_feed.stop), stepper(clock, 2),
                        ComparePlan(), clear=clear, clock_ns=clock)
    turns = [s for s in result.segments if s.side == "B"]
    assert b_feed.stops == len(turns)  # probes included
    for seg in (s for s in turns if s.round >= 0):
        assert seg.batches_per_sec == pytest.approx(100, rel=0.02), seg
    assert result.intervals["fed"].ratio == pytest.approx(12 / 10)  # B overlaps its input with the step; A cannot


def test_a_side_left_running_would_be_timed_on_batches_stocked_in_the_other_turn():
    """Why turns end the iterator: without it, B's turns after A's start with a full buffer."""
    clock = FakeClock()
    b_feed = PrefetchingFeed(clock, produce_ms=10, capacity=20)
    result = run_rounds(Side("A", feed(clock, 10)), Side("B", b_feed), stepper(clock, 2), ComparePlan(),
                        clear=clear, clock_ns=clock)
    after_a = [s for s in result.segments if s.side == "B" and s.kind == "fed" and s.round >= 0 and s.round % 2 == 0]
    assert all(s.batches_per_sec > 115 for s in after_a)


def test_a_slow_starting_iterator_gets_longer_turns():
    clock = FakeClock()

    class SlowStart:
        def __init__(self):
            self.fresh = True

        def __call__(self):
            clock.advance(300 if self.fresh else 1)  # e.g. a shuffle buffer filling
            self.fresh = False
            return "batch"

        def stop(self):
            self.fresh = True

    slow = SlowStart()
    result = run_rounds(Side("A", feed(clock, 1)), Side("B", slow, end_turn=slow.stop), stepper(clock, 1),
                        ComparePlan(), clear=clear, clock_ns=clock)
    assert result.segment_seconds >= 4 * 0.29  # 4x the 0.3 s start beyond its 1 ms batches
    assert any("starting a fresh iterator cost up to 0.30 s" in n for n in result.notes)


def test_out_of_memory_on_one_side_ends_the_run_and_names_the_side():
    class ResourceExhaustedError(Exception):
        pass

    clock = FakeClock()
    calls = {"n": 0}

    def step(batch):
        calls["n"] += 1
        clock.advance(1)
        if batch == "big":
            raise ResourceExhaustedError("OOM when allocating tensor")

    result = run_rounds(Side("A", lambda: "small"), Side("B", lambda: "big"), step, ComparePlan(),
                        clear=clear, clock_ns=clock)
    assert result.stop_reason == "out_of_memory" and result.failed_side == "B"
    assert result.rounds == () and result.intervals["fed"] is None


def test_ctrl_c_drops_the_round_it_cut_and_keeps_the_rest():
    clock = FakeClock()
    calls = {"n": 0}

    def step(batch):
        calls["n"] += 1
        clock.advance(5)
        if calls["n"] == 2000:
            raise KeyboardInterrupt

    result = run_rounds(Side("A", feed(clock, 1)), Side("B", feed(clock, 2)), step,
                        ComparePlan(kinds=("fed",)), clear=lambda iv: False, clock_ns=clock)
    assert result.stop_reason == "interrupted"
    assert len(result.rounds) >= 2 and result.intervals["fed"] is not None
    assert result.segments[-1].run.stop_reason == "interrupted"
    assert result.segments[-1].round == len(result.rounds)  # the cut round is not among the rounds


def test_against_a_saved_run_b_runs_alone_and_the_interval_is_unpaired():
    clock = FakeClock()
    saved = {k: run_mode("pipeline", feed(clock, 10), stepper(clock, 2) if k == "fed" else None,
                         StopRule(max_seconds=5, min_seconds=5, warmup_steps=0), clock_ns=clock)
             for k in ("fed", "input_only")}
    result = run_rounds(None, Side("B", feed(clock, 5)), stepper(clock, 2), ComparePlan(), clear=clear,
                        clock_ns=clock, baseline=saved)
    assert {s.side for s in result.segments} == {"B"}
    assert [r.order for r in result.rounds] == ["B"] * len(result.rounds)
    fed = result.intervals["fed"]
    assert fed.method == "unpaired" and fed.low < 12 / 7 < fed.high
    assert len(result.baseline_chunks["fed"]) == 10  # 5 s cut into turns of 0.5 s


def test_chunk_rates_cut_a_run_into_turn_sized_pieces():
    steps = [10_000_000] * 300  # 3 s at 100/s
    rates = chunk_rates(steps, 0.5)
    assert len(rates) == 6 and all(r == pytest.approx(100) for r in rates)
    assert len(chunk_rates(steps, 10.0)) == 5  # at least 5 values
    assert chunk_rates([5], 0.5) == ()


def test_rate_scale_turns_batches_into_examples():
    clock = FakeClock()
    result = run_rounds(Side("A", feed(clock, 10), rate_scale=32), Side("B", feed(clock, 10), rate_scale=64),
                        None, ComparePlan(kinds=("input_only",)), clear=clear, clock_ns=clock)
    assert result.primary == "input_only"
    assert result.intervals["input_only"].ratio == pytest.approx(2.0, rel=1e-6)


def test_plan_rejects_nonsense():
    with pytest.raises(ValueError):
        ComparePlan(kinds=("fed", "tuned"))
    with pytest.raises(ValueError):
        run_rounds(None, Side("B", lambda: 1), None, ComparePlan(), clear=clear, clock_ns=FakeClock())


def test_an_error_in_the_users_code_says_whose_turn_it_was():
    from pipediag.errors import UserCodeError

    clock = FakeClock()

    def broken():
        raise OSError("disk gone")

    with pytest.raises(UserCodeError) as info:
        run_rounds(Side("A", feed(clock, 1)), Side("B", broken), stepper(clock, 1), ComparePlan(), clear=clear,
                   clock_ns=clock)
    assert info.value.message == "your pipeline (in B's turn) raised OSError: disk gone"


def test_a_dispatched_step_overlaps_the_fetch_in_fed_turns():
    """A JAX-like step (8 ms on the device, 0.5 ms to dispatch): feeds of 2 and 6 ms are both
    hidden behind it, so fed training runs at the device's pace on both sides: no difference,
    where synchronous timing would have called B (6 ms) 1.4x slower."""
    clock = FakeClock()
    busy = {"until": 0}

    def dispatch(batch):
        clock.advance(0.5)
        busy["until"] = max(clock.ns, busy["until"]) + 8_000_000
        done = busy["until"]

        def finish():
            clock.ns = max(clock.ns, done)

        return finish

    plan = ComparePlan(kinds=("fed",))
    result = run_rounds(Side("A", feed(clock, 2)), Side("B", feed(clock, 6)), None, plan, clear=clear,
                        clock_ns=clock, dispatch=dispatch)
    fed = result.intervals["fed"]
    assert abs(fed.ratio - 1.0) < 0.02
    assert all(s.run.overlapped for s in result.segments)


def test_the_users_code_raising_mid_rounds_keeps_the_rounds_before_it():
    """The probes passed, then B's pipeline raised (or exited) in a later turn: the complete
    rounds are kept with their interval, the cut round is left out, and the error is handed back
    with whose turn it was."""
    from pipediag.errors import UserCodeError

    clock = FakeClock()
    b_calls = {"n": 0}

    def flaky():
        b_calls["n"] += 1
        clock.advance(2)
        if b_calls["n"] == 3000:
            sys.exit(4)  # the user's code exiting is their error too
        return "batch"

    result = run_rounds(Side("A", feed(clock, 1)), Side("B", flaky), stepper(clock, 1), ComparePlan(kinds=("fed",)),
                        clear=lambda iv: False, clock_ns=clock)
    assert result.stop_reason == "failed" and result.failed_side == "B"
    assert isinstance(result.error, UserCodeError)
    assert result.error.message.startswith("your pipeline (in B's turn) exited: sys.exit(4) at test_compare.py:")
    assert len(result.rounds) >= 2 and result.intervals["fed"] is not None
    cut = [s.side for s in result.segments if s.round == len(result.rounds)]
    assert cut in ([], ["A"])  # B's failed turn left no segment; A's turn of the cut round is not counted


def test_the_users_code_raising_in_a_probe_is_raised_nothing_to_keep():
    from pipediag.errors import UserCodeError

    clock = FakeClock()

    def exits():
        sys.exit(3)

    with pytest.raises(UserCodeError, match=r"your pipeline \(in B's turn\) exited: sys.exit\(3\)"):
        run_rounds(Side("A", feed(clock, 1)), Side("B", exits), stepper(clock, 1), ComparePlan(), clear=clear,
                   clock_ns=clock)
