"""The watchdog: a deadline on calls, in plain Python (no TensorFlow). Calls that block wait on an
Event the test releases at the end, so no thread outlives the test."""

import json
import threading

import pytest

from pipediag.modes import watchdog as wd
from pipediag.modes.runner import run_mode
from pipediag.modes.watchdog import Watchdog
from pipediag.records.run import StopRule
from pipediag.records.stall import PrefixReading, Stalled, StallInfo


@pytest.fixture
def release():
    event = threading.Event()
    yield event
    event.set()


def test_returns_the_result_and_reraises_the_callers_errors():
    dog = Watchdog(5.0)
    assert dog.call(lambda: 42, "x") == 42
    with pytest.raises(ZeroDivisionError):
        dog.call(lambda: 1 / 0, "x")
    with pytest.raises(StopIteration):
        dog.call(lambda: next(iter(())), "x")
    assert dog.call(lambda: "again", "x") == "again"  # the same worker goes on after an error


def test_a_call_past_its_deadline_raises_stalled_and_leaves_a_counted_thread(release):
    dog = Watchdog(0.2)
    before = wd.stuck_threads()
    with pytest.raises(Stalled) as raised:
        dog.call(release.wait, "pipeline mode")
    assert raised.value.what == "pipeline mode" and raised.value.timeout_s == 0.2
    assert "nothing for" in str(raised.value)
    assert wd.stuck_threads() == before + 1
    assert dog.call(lambda: "fresh worker", "x") == "fresh worker"  # the stuck one is not reused
    release.set()
    assert dog.last_stall is raised.value


def test_the_default_deadline_fits_the_slowest_call_with_a_floor():
    dog = Watchdog(floor_s=60.0, factor=10.0, first_call_s=300.0)
    assert dog.deadline_s() == 300.0  # nothing returned yet: the first batch may fill a shuffle buffer
    dog.seen(0.5)
    assert dog.deadline_s() == 60.0  # the floor
    dog.seen(9.0)
    dog.seen(1.0)
    assert dog.deadline_s() == 90.0  # 10x the slowest so far
    assert Watchdog(2.5).deadline_s() == 2.5  # the user's --stall-timeout, as given
    with pytest.raises(ValueError):
        Watchdog(0)


def test_the_first_batch_gets_two_minutes_by_default_and_the_flag_sets_any_other_deadline():
    assert wd.FIRST_CALL_S <= 120.0  # a first batch that never comes is reported within ~2 minutes
    assert Watchdog().deadline_s() == wd.FIRST_CALL_S
    assert Watchdog(600.0).deadline_s() == 600.0  # --stall-timeout 600: longer, when a first batch needs it
    assert Watchdog(600.0, first_call_s=wd.FIRST_CALL_S).deadline_s() == 600.0


class Recorded:
    """A Meanwhile that records its calls and answers with a scripted deadline."""

    def __init__(self, at_s, new_deadline_s):
        self.at, self.new_deadline_s, self.calls = at_s, new_deadline_s, []

    def at_s(self, deadline_s):
        return self.at

    def run(self, waited_s, deadline_s, returned):
        self.calls.append((waited_s, deadline_s, returned()))
        return self.new_deadline_s


def test_meanwhile_runs_once_while_the_call_is_awaited_and_its_deadline_is_kept(release):
    watch = Recorded(0.05, 0.4)
    with pytest.raises(Stalled) as raised:
        Watchdog(0.2).call(release.wait, "the first batch", meanwhile=watch)
    assert len(watch.calls) == 1
    waited_s, deadline_s, returned = watch.calls[0]
    assert waited_s >= 0.05 and deadline_s == 0.2 and returned is False
    assert raised.value.timeout_s == 0.4  # the deadline the meanwhile moved it to


def test_meanwhile_is_not_run_for_a_call_that_returns_before_its_time():
    watch = Recorded(30.0, 60.0)
    assert Watchdog(120.0).call(lambda: "batch", "the first batch", meanwhile=watch) == "batch"
    assert watch.calls == []
    late = Recorded(5.0, 60.0)  # its time is past the deadline: never run
    with pytest.raises(Stalled):
        Watchdog(0.1).call(threading.Event().wait, "x", meanwhile=late)
    assert late.calls == []


def test_a_read_with_its_own_budget_does_not_stretch_the_deadline_of_batches():
    dog = Watchdog(floor_s=1.0, factor=10.0)
    dog.call(lambda: __import__("time").sleep(0.2), "a counting pass", 5.0, fits=False)
    assert dog.slowest_s is None and dog.deadline_s() == wd.FIRST_CALL_S
    dog.call(lambda: __import__("time").sleep(0.2), "a batch")
    assert dog.slowest_s >= 0.2  # the same call, as a batch: fitted


def test_run_mode_keeps_the_steps_before_a_stall_and_says_what_it_was_doing(release):
    calls = [0]

    def next_batch():
        calls[0] += 1
        if calls[0] > 12:
            release.wait()
        return calls[0]

    run = run_mode("pipeline", next_batch, lambda batch: None, StopRule(max_seconds=60, min_seconds=60, warmup_steps=2),
                   clock_ns=__import__("time").monotonic_ns, watchdog=Watchdog(0.3))
    assert run.stop_reason == "stalled" and run.steps == 10  # 2 warm-up steps, then 10 timed
    assert run.error.type == "Stalled" and "waiting for the next batch" in run.error.message


def test_a_step_that_does_not_return_is_named_as_the_step(release):
    calls = [0]

    def step(batch):
        calls[0] += 1
        if calls[0] > 3:
            release.wait()

    run = run_mode("synthetic", lambda: 1, step, StopRule(max_seconds=60, min_seconds=60, warmup_steps=1),
                   clock_ns=__import__("time").monotonic_ns, watchdog=Watchdog(0.3))
    assert run.stop_reason == "stalled" and run.steps == 2
    assert "inside the step" in run.error.message


def test_stall_info_round_trips_and_reads():
    info = StallInfo(mode="pipeline", what="pipeline mode, waiting for the next batch from the pipeline",
                     waited_s=3.0, timeout_s=3.0, steps=45, stage="map(read)")
    assert StallInfo.from_dict(info.to_dict()) == info
    assert "map(read)" in info.text and "stall timeout 3 s" in info.text
    unknown = StallInfo("pipeline", "pipeline mode", 3.0, 3.0, stage_reason="every stage's prefix yielded")
    assert "not known: every stage" in unknown.text
    probed = StallInfo("first batch", "taking the dataset's first batch", 120.0, 120.0, stage="map(read)",
                       probe=(PrefixReading("RangeDataset", "yields", 12_000, 1.0), PrefixReading("map(read)", "nothing",
                                                                                                   seconds=5.0)),
                       probed_after_s=30.0)
    assert StallInfo.from_dict(json.loads(json.dumps(probed.to_dict()))) == probed
    assert probed.text.endswith("(each stage read fresh after 30 s: RangeDataset yields 12,000 elements/s; "
                                "map(read) nothing in 5 s)")
    old = {k: v for k, v in info.to_dict().items() if k not in ("probe", "probed_after_s")}  # a file from before
    assert StallInfo.from_dict(old) == info
