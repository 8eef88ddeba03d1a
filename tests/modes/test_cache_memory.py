"""The tuned mode's in-memory cache cannot exhaust memory: its fill is watched (this process's
RSS against the RAM budget) and abandoned with a reason, whatever the dataset said its size was.
Real TensorFlow caches of 256 KiB elements; a time limit is the safety net if the watch failed."""

import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.tuner.cache_fill import fill_cache  # noqa: E402

ELEMENT = 256 * 1024
BUDGET = 48 * 2**20


def _big(n):
    return tf.data.Dataset.range(n).map(lambda x: tf.fill([ELEMENT], tf.cast(x % 251, tf.uint8)))


def _growing(n):
    """Elements of 16 bytes at first, 256 KiB later: an estimate from the first ones is far off."""
    def element(x):
        size = tf.where(x < 100, tf.constant(16, tf.int64), tf.constant(ELEMENT, tf.int64))
        return tf.fill(tf.reshape(size, [1]), tf.constant(1, tf.uint8))
    return tf.data.Dataset.range(n).map(element)


@pytest.mark.parametrize("make", [
    lambda: _big(100_000).cache(),  # ~24 GiB: TensorFlow knows its length
    lambda: _big(100_000).filter(lambda x: x[0] < 250).cache(),  # a filter: length unknown
    lambda: _growing(100_000).cache(),  # sizes sampled from the first elements would say ~1.5 MiB
], ids=["known", "filter", "growing_elements"])
def test_a_cache_that_outgrows_the_budget_is_abandoned_with_the_reason(make):
    fill_ns, why = fill_cache(make(), limit_s=120, ram_budget_bytes=BUDGET)
    assert fill_ns is None
    assert "past the RAM budget" in why and "--ram-budget-mb" in why


def test_a_cardinality_that_lies_abandons_the_cache_with_tensorflows_reason():
    lying = _big(100_000).apply(tf.data.experimental.assert_cardinality(10)).cache()
    fill_ns, why = fill_cache(lying, limit_s=120, ram_budget_bytes=BUDGET)
    assert fill_ns is None and "filling it failed" in why and "10" in why


def test_a_cache_within_the_budget_is_filled():
    fill_ns, why = fill_cache(_big(20).cache(), limit_s=120, ram_budget_bytes=BUDGET)  # 5 MiB
    assert why is None and fill_ns > 0


def test_the_budget_is_read_against_the_rss_the_fill_adds():
    readings = iter([1_000, 1_000 + 2 * BUDGET])  # the first reading is the base
    fill_ns, why = fill_cache(_big(3).cache(), limit_s=120, ram_budget_bytes=BUDGET, rss=lambda: next(readings),
                              clock_ns=lambda: 0)  # a frozen clock: only the reading after the pass is taken
    assert fill_ns is None and "once filled it took 0.09 GiB" in why


def test_a_cache_fill_that_stalls_raises_stalled_under_the_watchdog():
    import threading
    import time

    from pipediag.modes.watchdog import Watchdog
    from pipediag.records.stall import Stalled

    release = threading.Event()

    def read(x):
        if int(x) >= 50:
            release.wait()  # a read that hangs until the test ends
        return x

    try:
        stuck = tf.data.Dataset.range(1000).map(lambda x: tf.py_function(read, [x], tf.int64)).cache()
        with pytest.raises(Stalled, match="filling the tuned mode's cache"):
            fill_cache(stuck, limit_s=120, ram_budget_bytes=BUDGET, guard=Watchdog(1.0).call, clock_ns=time.monotonic_ns)
    finally:
        release.set()
