"""InputMonitor inside real Keras fits (TensorFlow backend, CPU): the wait it measures, the verdict,
the files and TensorBoard scalars it writes, and that it leaves fit as it found it."""

import gc
import glob
import json
import os
import signal

import numpy as np
import pytest

from pipediag.backends.fake_nvml import FakeGpu, FakeNvml
from pipediag.backends.tf import keras, tf
from pipediag.keras import InputMonitor
from tests.fixtures.pipelines import serial_sleep_map, small_model

STEPS = 40


def model_for(x_dim, hidden=16, layers=1):
    model = keras.Sequential([keras.Input((x_dim,))] + [keras.layers.Dense(hidden) for _ in range(layers)]
                             + [keras.layers.Dense(4)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def scalars(log_dir):
    out = {}
    for path in glob.glob(os.path.join(log_dir, "pipediag", "events.out.tfevents.*")):
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                out.setdefault(value.tag, []).append((event.step, float(tf.make_ndarray(value.tensor))))
    return out


@pytest.mark.slow
def test_a_slow_pipeline_is_input_bound_and_every_output_is_written(tmp_path):
    model = small_model()
    monitor = InputMonitor(json=str(tmp_path / "fit.json"), html=str(tmp_path / "fit.html"),
                           samples_csv=str(tmp_path / "fit.csv"), log_dir=str(tmp_path / "tb"), verbose=0,
                           warmup_steps=3)
    model.fit(serial_sleep_map(), epochs=2, steps_per_epoch=STEPS // 2, verbose=0, shuffle=False, callbacks=[monitor])
    d = monitor.diagnosis
    assert d.status == "complete" and d.step.kind == "keras_fit"
    pipeline = d.modes["pipeline"]
    assert pipeline.steps == STEPS - 3 and set(d.modes) == {"pipeline"}
    # 16 elements x 3 ms of serial sleep per batch (>= 48 ms), against a step of a tiny model. Half
    # of that is the margin: a busy neighbour slows the model's step, which a prefetch overlaps.
    assert pipeline.input_wait_frac > 0.5 and pipeline.wait_ms_median > 24
    assert d.verdict.bottleneck == "input" and d.verdict.confidence in ("medium", "low")
    assert any("inside your fit only" in e for e in d.verdict.evidence)
    assert d.runs["pipeline"].stop_reason == "fit_ended" and d.settings["epochs"] == 2
    assert model.train_function != monitor._timed_train_function  # fit's own function is back
    assert json.loads((tmp_path / "fit.json").read_text())["verdict"]["bottleneck"] == "input"
    assert "INPUT" in (tmp_path / "fit.html").read_text()
    assert (tmp_path / "fit.csv").read_text().count(",pipeline,timed,") > 0
    tb = scalars(str(tmp_path / "tb"))
    assert [step for step, _ in tb["pipediag/input_wait_frac"]] == [0, 1]
    assert all(v > 0.5 for _, v in tb["pipediag/input_wait_frac"])
    assert "pipediag/gpu_util_pct" not in tb  # no GPU here: absent, not 0


@pytest.mark.slow
@pytest.mark.alone  # a wait of ~0.7% against a 5% line that pauses have crossed (below)
def test_free_input_with_an_idle_gpu_is_host_bound(tmp_path):
    x = np.random.default_rng(0).normal(size=(512, 64)).astype("float32")
    # batches made once and cached: taking one is far quicker than the step
    ds = tf.data.Dataset.from_tensor_slices((x, np.arange(512) % 4)).batch(64).cache().repeat().prefetch(2)
    gpu = FakeNvml([FakeGpu(util_pct=30.0)])  # a scripted GPU, busy 30% of the time
    monitor = InputMonitor(verbose=0, nvml_lib=gpu, log_dir=str(tmp_path))
    # ~70 ms per step (2-core machine, alone; ~110 ms beside a busy process), against ~0.5 ms to take a
    # ready batch: a wait of ~0.7%, far under the 5% line. In the full suite (a long-lived process) the
    # wait has twice crossed that line on a smaller step (2026-12-02: 10% over 35 steps of ~30 ms;
    # 2026-12-04 in CI: 6% over 115 steps, where alone the same test read 2.6%), from pauses whose cause
    # was not identified (a garbage collection inside a fetch would do it). Over 85 timed steps of
    # ~70 ms, pauses must add up to ~250 ms to cross it; the heap is collected first, so the suite's
    # earlier tests leave less for a collection to do here.
    gc.collect()
    model_for(64, hidden=4096, layers=2).fit(ds, epochs=1, steps_per_epoch=90, verbose=0, shuffle=False,
                                             callbacks=[monitor])
    d = monitor.diagnosis
    assert d.modes["pipeline"].input_wait_frac < 0.05 and d.modes["pipeline"].gpu_util_pct == 30.0
    assert d.verdict.bottleneck == "host"
    assert scalars(str(tmp_path))["pipediag/gpu_util_pct"] == [(0, 30.0)]


@pytest.mark.slow
def test_steps_per_execution_above_one_is_left_alone_and_said():
    model = small_model()
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  steps_per_execution=4)
    monitor = InputMonitor(verbose=0)
    history = model.fit(serial_sleep_map(), epochs=1, steps_per_epoch=8, verbose=0, shuffle=False, callbacks=[monitor])
    assert len(history.history["loss"]) == 1
    d = monitor.diagnosis
    assert d.modes == {} and d.verdict.bottleneck == "inconclusive"
    assert "steps_per_execution=4" in d.verdict.reason


@pytest.mark.slow
def test_ctrl_c_in_fit_leaves_a_partial_diagnosis(tmp_path):
    calls = []

    def interrupt_on_the_30th(x):
        calls.append(1)
        if len(calls) == 30:
            signal.raise_signal(signal.SIGINT)  # what Ctrl-C does; Python raises it in the main thread
        return x

    ds = serial_sleep_map(batch_size=4).map(lambda x, y: (tf.numpy_function(interrupt_on_the_30th, [x], tf.float32), y))
    ds = ds.map(lambda x, y: (tf.ensure_shape(x, [None, 8]), y))
    monitor = InputMonitor(json=str(tmp_path / "partial.json"), verbose=0, warmup_steps=2)
    with pytest.raises(KeyboardInterrupt):
        small_model().fit(ds, epochs=1, steps_per_epoch=1000, verbose=0, shuffle=False, callbacks=[monitor])
    d = monitor.result()
    assert d.status == "interrupted" and d.verdict.confidence == "low"
    assert json.loads((tmp_path / "partial.json").read_text())["status"] == "interrupted"


@pytest.mark.slow
def test_a_fit_that_raised_does_not_break_the_next_one():
    class Stop(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == 3:
                raise RuntimeError("the user's own callback failed")

    model, ds = small_model(), serial_sleep_map()
    monitor = InputMonitor(verbose=0, warmup_steps=1)
    with pytest.raises(RuntimeError):
        model.fit(ds, epochs=1, steps_per_epoch=10, verbose=0, shuffle=False, callbacks=[monitor, Stop()])
    model.fit(ds, epochs=1, steps_per_epoch=14, verbose=0, shuffle=False, callbacks=[monitor])  # the wrapper left behind is undone
    assert monitor.diagnosis.status == "complete" and monitor.diagnosis.modes["pipeline"].steps == 13
    assert model.train_function != monitor._timed_train_function
