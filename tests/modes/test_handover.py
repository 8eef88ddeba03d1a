"""The hand-over of an already-produced batch, timed through the real feed (TensorFlow, CPU)."""

import time

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from pipediag.analysis.handover import handover_from_run  # noqa: E402
from pipediag.backends.tf import tf  # noqa: E402
from pipediag.errors import MeasurementError  # noqa: E402
from pipediag.modes import handover as handover_mode  # noqa: E402
from pipediag.modes.feeds import BatchFeed  # noqa: E402
from pipediag.modes.handover import (  # noqa: E402
    device_copy,
    host_leaves,
    jax_copy,
    measure_handover,
    repeated_batch,
    torch_copy,
)
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


# The device copy on what each feed yields. On the H200 (issue 25) the copy gave TensorFlow tensors
# (--batch-format tf, the default) to jax.device_put, which raised TypeError; here JAX and PyTorch
# copy to their CPU device: the conversion is the same code, the host-to-GPU transfer and its
# timing only the H200 can show.
MIXED = {"x": BATCH[0], "y": BATCH[1], "name": tf.constant([b"a", b"b", b"c", b"d"]),
         "ragged": tf.ragged.constant([[1, 2], [3], [], [4]])}


def _fed(batch_format):
    feed = BatchFeed(tf.data.Dataset.from_tensors(MIXED).repeat(), batch_format, keep_first=0)
    try:
        return feed()
    finally:
        feed.close()


@pytest.mark.parametrize("batch_format", ["tf", "numpy", "dlpack"])
def test_host_leaves_keep_every_numeric_array_of_each_format_and_leave_strings_out(batch_format):
    leaves = host_leaves(_fed(batch_format))
    # x, y, the ragged tensor's values and row splits (tf format: its components; numpy: ragged
    # arrives as a tf.RaggedTensorValue, whose components are NumPy arrays); the strings dropped
    as_numpy = [np.asarray(getattr(x, "tensor", x)) for x in leaves]
    assert any(np.array_equal(a, BATCH[0].numpy()) for a in as_numpy)
    assert any(np.array_equal(a, BATCH[1].numpy()) for a in as_numpy)
    assert all(a.dtype.kind not in "OSU" for a in as_numpy)
    assert not any(isinstance(x, tf.Tensor) for x in leaves)


def test_the_old_copy_fails_on_tensorflow_tensors_and_the_new_one_does_not():
    jax = pytest.importorskip("jax")
    cpu = jax.devices("cpu")[0]
    batch = _fed("tf")
    with pytest.raises(TypeError):  # what the H200 run hit: TensorFlow tensors given to device_put
        jax.device_put([BATCH[0]], cpu)
    for batch_format in ("tf", "numpy", "dlpack"):
        out = jax_copy(jax, cpu)(_fed(batch_format))
        assert any(np.array_equal(np.asarray(a), BATCH[0].numpy()) for a in out)
        assert all(a.devices() == {cpu} for a in out)
    assert len(jax_copy(jax, cpu)(batch)) == len(host_leaves(batch))


@pytest.mark.parametrize("batch_format", ["tf", "numpy", "dlpack"])
def test_the_torch_copy_takes_each_format(batch_format):
    torch = pytest.importorskip("torch")
    out = torch_copy(torch, "cpu")(_fed(batch_format))
    assert any(np.array_equal(t.numpy(), BATCH[0].numpy()) for t in out)


def test_a_failed_hand_over_measurement_blames_pipediag_not_the_step(monkeypatch):
    jax = pytest.importorskip("jax")
    cpu = jax.devices("cpu")[0]

    def old_copy(batch):  # the copy as it was before issue 25: TensorFlow tensors to device_put
        return jax.block_until_ready(jax.device_put(tf.nest.flatten(batch), cpu))

    monkeypatch.setattr(handover_mode, "device_copy", lambda framework, batch_format: (old_copy, "jax.device_put"))
    with pytest.raises(MeasurementError) as caught:
        measure_handover(BATCH, "tf", "jax", SHORT, clock_ns=time.perf_counter_ns)
    text = str(caught.value)
    assert "pipediag's own hand-over timing (jax.device_put) raised TypeError" in text
    assert "your step" not in text and "a fault in pipediag" in text



def test_a_distributed_hand_over_is_timed_through_the_feed_it_is_given(monkeypatch):
    # A step under a tf.distribute strategy takes its batches from the strategy's distributed
    # iterator: the ready batch is handed over through that same kind of feed, with no copy of its
    # own (the distributed iterator places each replica's slice), and the record says through what.
    from pipediag.modes.distributed import DistributedFeed

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    made = []

    def feed_of(dataset):
        made.append(DistributedFeed(dataset, strategy, keep_first=0))
        return made[-1]

    monkeypatch.setattr(handover_mode, "device_copy", lambda *a: pytest.fail("a distributed hand-over makes no copy"))
    h = measure_handover(BATCH, "tf", "tensorflow", SHORT, clock_ns=time.perf_counter_ns, feed_of=feed_of,
                         through="the distributed iterator of strategy.experimental_distribute_dataset")
    assert len(made) == 1 and made[0].batches == h.batches + SHORT.warmup_steps
    # what it handed over: the batch itself, repeated (a ready batch, not the pipeline's work)
    assert made[0].dataset.cardinality() == tf.data.INFINITE_CARDINALITY
    again = list(made[0].dataset.take(2).as_numpy_iterator())
    assert all(np.array_equal(a[0], BATCH[0].numpy()) for a in again)
    assert h.through == "the distributed iterator of strategy.experimental_distribute_dataset"
    assert h.transfer_ms_mean is None and "puts each replica's slice on its device" in h.transfer_text
    # a plain hand-over says nothing of the kind
    monkeypatch.undo()
    assert measure_handover(BATCH, "tf", "tensorflow", SHORT, clock_ns=time.perf_counter_ns).through is None
