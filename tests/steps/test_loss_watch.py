"""The loss watch: a NaN or infinite loss is noted; results that are not host numbers are not read."""

import math

import numpy as np

from pipediag.steps.loss_watch import LossWatch, loss_of


def test_loss_of_reads_host_numbers_only():
    assert loss_of(0.5) == 0.5 and loss_of(np.float32(2.0)) == 2.0 and loss_of(np.array([3.0])) == 3.0
    assert loss_of({"loss": np.float32(1.5), "accuracy": 0.1}) == 1.5  # Keras logs
    assert loss_of({"accuracy": 0.1}) is None and loss_of(None) is None and loss_of(True) is None
    assert loss_of(np.zeros(4)) is None  # not one number

    class DeviceArray:  # a framework tensor: reading it would wait for the device
        size = 1

        def __float__(self):
            raise AssertionError("the watch must not read a device value")

    assert loss_of(DeviceArray()) is None


def test_the_first_non_finite_loss_and_the_count_are_noted():
    watch = LossWatch()
    run = watch.wrap(lambda loss: loss)
    for loss in (1.0, 0.5, math.nan, math.inf, 0.1):
        assert run(loss) == loss or math.isnan(loss)  # the result passes through unchanged
    note = watch.note()
    assert "the loss was nan from step 3 on (2 of 5 steps)" in note
    assert "timings stand" in note and "check the batches for NaN or inf" in note
    assert "stand-in model" in LossWatch.note(watch, standin=True)


def test_finite_losses_and_tensors_give_no_note():
    watch = LossWatch()
    for result in (1.0, {"loss": 0.2}, object()):
        watch.see(result)
    assert watch.note() is None and watch.steps == 3


def test_a_dispatched_step_is_seen_once_waited_for():
    watch = LossWatch()
    dispatch = watch.wrap_dispatch(lambda batch: (lambda: math.nan))
    finish = dispatch("batch")
    assert watch.steps == 0  # started, not yet waited for
    assert math.isnan(finish()) and watch.first_step == 1
