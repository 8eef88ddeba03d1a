"""The hand-over of an already-produced batch, timed through the real feed (TensorFlow, CPU)."""

import time

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from pipediag.analysis.handover import handover_from_run  # noqa: E402
from pipediag.backends.tf import tf  # noqa: E402
from pipediag.modes.handover import device_copy, measure_handover, repeated_batch  # noqa: E402
from pipediag.records.run import ModeRun, StopRule  # noqa: E402

BATCH = (tf.constant(np.arange(24, dtype="float32").reshape(4, 6)), tf.constant([0, 1, 2, 3]))
SHORT = StopRule(max_seconds=0.3, min_seconds=0.1, min_steps=20, warmup_steps=2)


def test_the_repeated_batch_is_the_batch_itself_again_and_again():
    got = list(repeated_batch(BATCH).take(3).as_numpy_iterator())
    assert len(got) == 3 and all(np.array_equal(g[0], BATCH[0].numpy()) for g in got)


@pytest.mark.parametrize("batch_format", ["tf", "numpy", "dlpack"])
def test_the_hand_over_is_timed_through_the_feed_of_the_step(batch_format):
    h = measure_handover(BATCH, batch_format, "tensorflow", SHORT, clock_ns=time.perf_counter_ns)
    assert h.batches >= 20 and h.batch_format == batch_format
    assert h.ms_mean > 0 and h.fetch_ms_mean > 0 and h.ms_mean_ci is not None
    assert h.ms_mean_ci[0] <= h.ms_mean <= h.ms_mean_ci[1]
    # On this CPU-only machine no framework copies to a device, and the report says why.
    assert h.transfer_ms_mean is None and "no accelerator here" in h.transfer_text


def test_no_device_copy_is_invented_for_jax_or_torch_on_the_cpu():
    pytest.importorskip("jax")
    import jax  # noqa: F401  (the step's framework is imported by the step)

    copy, why = device_copy("jax", "numpy")
    assert copy is None and "JAX runs on the CPU here" in why


def test_the_record_splits_the_fetch_from_the_copy():
    run = ModeRun(name="handover", start_ns=0, end_ns=10**9, wait_ns=(100_000,) * 40, compute_ns=(50_000,) * 40,
                  first_step_ns=None, warmup_steps=2, warmup_ns=0, stop_reason="stable")
    h = handover_from_run(run, "numpy", "jax.device_put to cuda:0, waited for", transferred=True)
    assert (h.ms_mean, h.fetch_ms_mean, h.transfer_ms_mean) == pytest.approx((0.15, 0.1, 0.05))
    assert handover_from_run(run, "numpy", "none", transferred=False).transfer_ms_mean is None
    empty = ModeRun(name="handover", start_ns=0, end_ns=1, wait_ns=(), compute_ns=(), first_step_ns=None,
                    warmup_steps=0, warmup_ns=0, stop_reason="interrupted")
    assert handover_from_run(empty, "numpy", "none", transferred=False) is None
