"""What a tf.distribute loop's iterator adds to the pipeline, said from two plain rates."""

from pipediag.analysis.handover import distributed_iterator_text

THROUGH = "the distributed iterator of strategy.experimental_distribute_dataset (MirroredStrategy, 1 replica(s))"


def test_the_iterators_cost_per_batch_is_the_difference_of_the_two_rates():
    # the H200, 2026-12-04: the custom MirroredStrategy loop's pipeline through its iterator and plainly
    text = distributed_iterator_text(460.1, 6643.8, THROUGH, 2.79)
    added = 1e3 / 460.1 - 1e3 / 6643.8
    assert f"adds {added:.2f} ms to every batch" in text and "2.02 ms" in text
    assert "460 batches/s through the distributed iterator of" in text and "6644 through a plain" in text
    assert "your loop waited 2.79 ms a step" in text and "a pipeline change does not remove it" in text


def test_no_cost_is_said_as_none_and_a_missing_rate_says_nothing():
    assert "adds nothing measurable" in distributed_iterator_text(5000.0, 4800.0, THROUGH, None)
    assert "waited" not in distributed_iterator_text(5000.0, 4800.0, THROUGH, None)
    assert distributed_iterator_text(None, 4800.0, THROUGH, 1.0) is None
    assert distributed_iterator_text(460.0, 0.0, THROUGH, 1.0) is None
