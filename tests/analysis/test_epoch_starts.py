"""The wait at each epoch's start kept apart from the steady-state wait, on scripted numbers."""

import pytest

from pipediag.analysis.epoch_starts import MAX_START_STEPS, split_epoch_starts, without

MS = 1_000_000


def loop(epochs: int, per_epoch: int, start_wait_ms: float, steady_wait_ms: float = 0.2, rest_ms: float = 8.0,
         first_offset: int = 10):
    """A loop of `epochs` iterators of `per_epoch` steps, timed from step `first_offset` of the first."""
    wait, step, epoch = [], [], []
    for e in range(epochs):
        for p in range(per_epoch):
            if e == 0 and p < first_offset:
                continue
            w = (start_wait_ms if p == 0 else steady_wait_ms) * MS
            wait.append(int(w))
            step.append(int(w + rest_ms * MS))
            epoch.append(e)
    return wait, step, epoch


def test_a_refill_at_every_epoch_start_is_its_own_cost():
    wait, step, epoch = loop(epochs=4, per_epoch=100, start_wait_ms=300)
    found = split_epoch_starts(wait, step, epoch)
    assert found.starts == 3 and found.found
    assert found.wait_per_start_ns == 300 * MS
    assert len(found.start_steps) == 3
    assert found.steady_wait_median_ns == pytest.approx(0.2 * MS)
    assert found.steps_per_epoch == 100
    total = sum(step)
    assert found.share == pytest.approx(900 * MS / total)
    steady_wait = without(wait, found.start_steps)
    assert max(steady_wait) == int(0.2 * MS)  # what is left for the verdict: the steady wait alone
    assert "300 ms" in found.text() and "3 epoch start(s)" in found.text()


def test_a_wait_spread_over_every_step_is_no_start_cost():
    # the distributed tutorial as measured: ~1.6 ms on every step, the same at each epoch's start
    wait, step, epoch = loop(epochs=3, per_epoch=100, start_wait_ms=1.7, steady_wait_ms=1.6)
    found = split_epoch_starts(wait, step, epoch)
    assert found.starts == 2 and not found.found and found.start_steps == ()


def test_one_iterator_has_no_start_inside_the_timed_steps():
    wait, step, epoch = loop(epochs=1, per_epoch=200, start_wait_ms=300, first_offset=5)
    found = split_epoch_starts(wait, step, epoch)
    assert found.starts == 0 and not found.found and found.steps_per_epoch is None


def test_a_start_spread_over_a_few_steps_is_counted_whole_and_no_further():
    wait, step, epoch = loop(epochs=3, per_epoch=50, start_wait_ms=100)
    for k in range(len(epoch)):
        if k > 0 and epoch[k] != epoch[k - 1]:
            wait[k + 1] = 50 * MS  # the second step of the epoch still waits (a prefetch buffer filling)
            step[k + 1] = 58 * MS
    found = split_epoch_starts(wait, step, epoch)
    assert found.wait_per_start_ns == 150 * MS and len(found.start_steps) == 4
    wait, step, epoch = loop(epochs=3, per_epoch=50, start_wait_ms=0.2, steady_wait_ms=0.2)
    for k in range(len(epoch)):
        if epoch[k] == 1:
            wait[k] = 40 * MS  # a whole slow epoch is not a start: it is part of the steady state
    found = split_epoch_starts(wait, step, epoch)
    assert found.start_steps == () and not found.found
    wait, step, epoch = loop(epochs=2, per_epoch=400, start_wait_ms=0.2, steady_wait_ms=0.2)
    first = epoch.index(1)
    for k in range(first, first + 20):
        wait[k] = 100 * MS  # a slow stretch at the start: at most MAX_START_STEPS of it is the start
    found = split_epoch_starts(wait, step, epoch)
    assert len(found.start_steps) == MAX_START_STEPS


def test_a_small_start_cost_is_not_reported():
    wait, step, epoch = loop(epochs=3, per_epoch=1000, start_wait_ms=20)
    found = split_epoch_starts(wait, step, epoch)
    assert found.start_wait_ns and found.share < 0.02 and not found.found


def test_lengths_must_match():
    with pytest.raises(ValueError):
        split_epoch_starts([1, 2], [3], [0, 0])


def short_epochs(epochs: int, per_epoch: int = 4, start_wait_ms: float = 16.0, steady_wait_ms: float = 0.3,
                 rest_ms: float = 11.0, warmup: int = 8):
    """A loop of short epochs (a new iterator every `per_epoch` steps), as recorded: the first
    `warmup` steps' iterators, then the timed steps' waits, whole steps and iterators."""
    wait, step, epoch = [], [], []
    for e in range(epochs):
        for p in range(per_epoch):
            w = (start_wait_ms if p == 0 else steady_wait_ms) * MS
            wait.append(int(w))
            step.append(int(w + rest_ms * MS))
            epoch.append(e)
    return epoch[:warmup], wait[warmup:], step[warmup:], epoch[warmup:]


def test_short_epochs_whose_starts_are_every_few_steps():
    # the TF custom-training walkthrough as `pipediag run` recorded it (2-core machine, 2026-12-07):
    # epochs of 4 batches, each new iterator's first batch waited ~16 ms (its shuffle buffer refilled
    # from the CSV), the 3 others ~0.3 ms, on an eager step of ~11 ms; the warm-up ended at an
    # iterator's end, so the first timed step is a start too. Counted from the first timed step's
    # iterator as if it had started before, its start stood in the "steady" steps, and no start
    # was found.
    earlier, wait, step, epoch = short_epochs(epochs=30)
    found = split_epoch_starts(wait, step, epoch, earlier_epoch=earlier)
    assert found.starts == 28 and found.found
    assert len(found.start_steps) == 28 and found.start_steps[:2] == (0, 4)
    assert found.wait_per_start_ns == 16 * MS
    assert found.steady_wait_median_ns == pytest.approx(0.3 * MS)
    assert found.steps_per_epoch == 4
    assert found.share == pytest.approx(28 * 16 / (28 * 16 + 84 * 0.3 + 112 * 11), rel=1e-3)
    assert max(without(wait, found.start_steps)) == int(0.3 * MS)


def test_short_epochs_timed_from_inside_an_iterator():
    earlier, wait, step, epoch = short_epochs(epochs=30, warmup=6)  # the first timed steps end iterator 1
    found = split_epoch_starts(wait, step, epoch, earlier_epoch=earlier)
    assert found.starts == 28 and found.found
    assert found.start_steps[:2] == (2, 6)  # the steps left of iterator 1 are not starts
    assert found.steady_wait_median_ns == pytest.approx(0.3 * MS)


def test_a_long_first_iterator_continued_from_the_warm_up():
    wait, step, epoch = loop(epochs=3, per_epoch=100, start_wait_ms=300, first_offset=5)
    found = split_epoch_starts(wait, step, epoch, earlier_epoch=[0] * 5)
    assert found.starts == 2 and found.found and found.wait_per_start_ns == 300 * MS
    assert found.steady_wait_median_ns == pytest.approx(0.2 * MS)


def test_making_each_iterator_counts_into_its_start():
    # `iter(dataset)` of the walkthrough's make_csv_dataset took ~7 ms each epoch (plain TensorFlow on
    # the 2-core machine, 2026-12-07), outside any step: it is part of the start's cost and of the time
    earlier, wait, step, epoch = short_epochs(epochs=30)
    made = [7 * MS if k > 0 and epoch[k] != epoch[k - 1] or k == 0 else 0 for k in range(len(epoch))]
    found = split_epoch_starts(wait, step, epoch, earlier_epoch=earlier, made_ns=made)
    assert found.wait_per_start_ns == 23 * MS and found.made_per_start_ns == 7 * MS
    assert found.total_ns == sum(step) + 28 * 7 * MS
    assert found.share == pytest.approx(28 * 23 / (28 * 23 + 84 * 0.3 + 112 * 11), rel=1e-3)
    assert "23 ms (7 ms making its iterator" in found.text()
    with pytest.raises(ValueError):
        split_epoch_starts(wait, step, epoch, made_ns=made[1:])
