"""Reading the prefixes fresh while a first batch is awaited, on real pipelines: a py_function that
waits on an Event never set during the test (set at teardown, so no thread outlives it), and a
shuffle fed too slowly to fill. Deadlines are small and passed in; nothing is timed."""

import threading
import time

import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.builder.prepare import prepare_dataset  # noqa: E402
from pipediag.modes.probe import FirstBatchWatch, locate, probe_prefixes  # noqa: E402
from pipediag.modes.watchdog import Watchdog  # noqa: E402
from pipediag.records.stall import Stalled  # noqa: E402


@pytest.fixture
def never():
    event = threading.Event()
    yield event
    event.set()


def hanging(event, after=0):
    def wait(x):
        if int(x) >= after:
            event.wait()
        return x

    def hang_read(x):
        return tf.py_function(wait, [x], tf.int64)
    return tf.data.Dataset.range(10**9).map(lambda x: x * 2).map(hang_read).batch(8).prefetch(2)


def slow_shuffle():
    def slow(x):
        time.sleep(0.001)  # ~1,000 elements/s at most: 100,000 take 100 s or more
        return x

    def slow_read(x):
        return tf.py_function(slow, [x], tf.int64)
    return tf.data.Dataset.range(10**9).map(slow_read).shuffle(100_000).batch(8)


def states(readings):
    return [(r.stage, r.state) for r in readings]


@pytest.mark.slow
def test_the_prefix_that_gives_nothing_names_the_hanging_stage(never):
    ds = hanging(never)
    readings = probe_prefixes(PipelineGraph.from_dataset(ds), ds.options(), first_s=1.0, window_s=0.4)
    assert states(readings) == [("RangeDataset", "yields"), ("map(<lambda>)", "yields"), ("map(hang_read)", "nothing")]
    assert readings[0].per_s > 0 and readings[-1].seconds == 1.0


def test_a_shuffle_fed_slowly_reads_as_filling_not_as_stalled():
    ds = slow_shuffle()
    readings = probe_prefixes(PipelineGraph.from_dataset(ds), ds.options(), first_s=1.0, window_s=0.4)
    assert states(readings) == [("RangeDataset", "yields"), ("map(slow_read)", "yields"), ("shuffle(100000)", "filling")]
    assert readings[-1].fill_s > 1.0  # longer than the probe waits: not read, so no second buffer is filled


@pytest.mark.slow
def test_a_stage_that_stops_after_some_elements_is_found_after_a_stall(never):
    ds = hanging(never, after=40)  # its input is x * 2: it hangs on its 21st element
    finding, readings = locate(PipelineGraph.from_dataset(ds), ds.options(), first_s=1.0)
    assert finding.stage == "map(hang_read)"
    assert readings[-1].state == "stopped" and readings[-1].elements == 20


@pytest.mark.slow
def test_the_early_word_names_the_stage_while_the_first_batch_is_awaited_and_the_stall_keeps_it(never):
    said = []
    dog = Watchdog(floor_s=0.0, first_call_s=4.0)  # pipediag's own deadline, scaled down
    watches = []

    def watch(graph, dataset):
        watches.append(FirstBatchWatch(graph, dataset.options(), phase=said.append, fixed=False, early_s=0.5,
                                       first_s=1.0, window_s=0.4))
        return watches[0]

    with pytest.raises(Stalled) as raised:
        prepare_dataset(hanging(never), {}, None, False, 0, phase=said.append, guard=dog.call, watch=watch)
    assert said[0] == "building the dataset" and said[1] == "taking the first batch"
    assert said[2] == "finding where the first batch waits"
    assert said[3].startswith("no first batch after ")
    assert said[3].endswith(" s: map(hang_read) gives nothing when read fresh; the stages before it yield "
                            "(waiting up to 4 s in all)")
    assert said[4] == "waiting for the first batch"
    assert watches[0].finding.stage == "map(hang_read)" and watches[0].probed_after_s >= 0.5
    assert raised.value.timeout_s == 4.0  # a true stall keeps its deadline


def test_a_buffer_seen_filling_moves_pipediags_deadline_and_not_the_users():
    ds = slow_shuffle()
    graph = PipelineGraph.from_dataset(ds)
    said = []
    ours = FirstBatchWatch(graph, ds.options(), phase=said.append, fixed=False, first_s=1.0, window_s=0.4)
    assert ours.run(30.0, 120.0, returned=lambda: False) > 120.0
    assert said[-2].startswith("no first batch after 30 s: shuffle(100000) is filling its buffer, ~")
    users = FirstBatchWatch(graph, ds.options(), phase=said.append, fixed=True, first_s=1.0, window_s=0.4)
    assert users.run(30.0, 120.0, returned=lambda: False) == 120.0
    assert users.finding.filling is not None and users.finding.stage is None
