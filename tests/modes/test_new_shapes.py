"""The first step of each new batch shape (a retrace) is kept out of the timings like the first
step: scripted step times on a fake clock, and a real Keras model on a finite dataset whose last
batch is short (structure only: which step was kept out, never how long it took)."""

import numpy as np
import pytest

from pipediag.analysis.modes import summarize, summary_from_dict
from pipediag.modes.runner import MAX_NEW_SHAPE_STEPS, run_mode
from pipediag.modes.stepping import batch_shape
from pipediag.records.readings import SampleLog
from pipediag.records.run import ModeRun, StopRule
from tests.modes.test_runner import FakeClock

RULE = StopRule(max_seconds=2.0, min_seconds=2.0, min_steps=10, warmup_steps=2)
RETRACE_MS, STEP_MS, WAIT_MS = 900.0, 10.0, 1.0


def epoch_feed(clock, sizes):
    """Batches of `sizes` in turn, again and again (a repeated finite epoch)."""
    state = {"i": 0}

    def next_batch():
        clock.advance(WAIT_MS)
        n = sizes[state["i"] % len(sizes)]
        state["i"] += 1
        return (np.zeros((n, 3), np.float32), np.zeros((n,), np.int32))

    return next_batch


def tracing_step(clock):
    """Costs RETRACE_MS on the first call per batch shape, as tf.function does, else STEP_MS."""
    traced = set()

    def step(batch):
        shape = batch_shape(batch)
        clock.advance(STEP_MS if shape in traced else RETRACE_MS)
        traced.add(shape)

    return step


def test_a_short_last_batch_retraces_once_and_that_step_is_kept_out():
    clock = FakeClock()
    run = run_mode("pipeline", epoch_feed(clock, [8, 8, 8, 4]), tracing_step(clock), RULE, clock_ns=clock,
                   first_step_is_compile=True)
    assert run.new_shape_steps_ns == (int((WAIT_MS + RETRACE_MS) * 1e6),)
    assert set(run.step_ns) == {int((WAIT_MS + STEP_MS) * 1e6)}  # later short batches are no retrace
    assert any("first step of each new batch shape (1): 901 ms, kept out" in n for n in run.notes)
    back = ModeRun.from_dict(run.to_dict())
    assert back.new_shape_steps_ns == run.new_shape_steps_ns


def test_shapes_seen_in_the_warm_up_are_not_kept_out():
    clock = FakeClock()
    run = run_mode("pipeline", epoch_feed(clock, [8, 4]), tracing_step(clock), RULE, clock_ns=clock,
                   first_step_is_compile=True)  # the compile step and warm-up see both shapes
    assert run.new_shape_steps_ns == () and not run.notes


def test_shapes_that_keep_changing_are_the_steady_state_and_stay_in():
    clock = FakeClock()
    sizes = list(range(1, 200))  # padding to each batch's longest element: a new shape every step
    long = StopRule(max_seconds=20.0, min_seconds=20.0, min_steps=10, warmup_steps=2)
    run = run_mode("pipeline", epoch_feed(clock, sizes), tracing_step(clock), long, clock_ns=clock,
                   first_step_is_compile=True)
    assert run.new_shape_steps_ns == ()
    assert run.steps > MAX_NEW_SHAPE_STEPS and set(run.step_ns) == {int((WAIT_MS + RETRACE_MS) * 1e6)}
    assert any("the shapes keep changing" in n for n in run.notes)


def test_new_shapes_that_are_most_of_a_short_run_stay_in():
    clock = FakeClock()
    run = run_mode("pipeline", epoch_feed(clock, list(range(1, 200))), tracing_step(clock), RULE, clock_ns=clock,
                   first_step_is_compile=True)  # 2 s of 0.9 s retraces: 3 steps, every one a new shape
    assert run.new_shape_steps_ns == () and run.steps == 3
    assert any("the shapes keep changing" in n for n in run.notes)


def test_the_pipeline_alone_keeps_every_batch():
    clock = FakeClock()
    run = run_mode("input_only", epoch_feed(clock, [8, 8, 4]), None, RULE, clock_ns=clock)
    assert run.new_shape_steps_ns == () and set(run.wait_ns) == {int(WAIT_MS * 1e6)}


def test_overlapped_steps_keep_their_fetch_and_block_aligned():
    clock = FakeClock()
    step = tracing_step(clock)

    def dispatch(batch):
        step(batch)
        return lambda: clock.advance(0.5)

    run = run_mode("pipeline", epoch_feed(clock, [8, 8, 8, 4]), None, RULE, clock_ns=clock, dispatch=dispatch,
                   hideable_ns=0, first_step_is_compile=True)
    assert len(run.new_shape_steps_ns) == 1
    assert len(run.fetch_ns) == len(run.block_ns) == run.steps
    assert max(run.compute_ns) < RETRACE_MS * 1e6


def test_the_summary_carries_the_kept_out_steps():
    clock = FakeClock()
    run = run_mode("pipeline", epoch_feed(clock, [8, 8, 8, 4]), tracing_step(clock), RULE, clock_ns=clock,
                   first_step_is_compile=True)
    m = summarize(run, SampleLog(interval_s=0.1, samples=(), gpu_unavailable_reason="no GPU here"))
    assert m.new_shape_steps_ms == pytest.approx((WAIT_MS + RETRACE_MS,))
    assert summary_from_dict(m.to_dict()).new_shape_steps_ms == m.new_shape_steps_ms


def test_batch_shape_reads_nested_batches():
    batch = {"b": np.zeros((4, 2)), "a": (np.zeros((4,)), "text")}
    assert batch_shape(batch) == (("a", ((4,), None)), ("b", (4, 2)))


def test_a_real_keras_model_on_a_finite_dataset_keeps_out_its_short_batch_retrace():
    from pipediag.backends.tf import keras, tf
    from pipediag.modes.feeds import BatchFeed
    from pipediag.steps.keras_step import keras_step

    x = np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)
    y = np.arange(20, dtype=np.int32) % 4
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)  # 8, 8, 4: no drop_remainder
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    step = keras_step(model, "the model")
    feed = BatchFeed(dataset, step.info.batch_format)
    rule = StopRule(max_seconds=1.0, min_seconds=1.0, min_steps=10, warmup_steps=1)
    run = run_mode("pipeline", feed, step.run, rule, clock_ns=__import__("time").perf_counter_ns,
                   first_step_is_compile=True)
    feed.close()
    # The compile step and one warm-up step saw the full batches; the third batch (4 rows) is the
    # first of its shape: kept out, once, however many epochs later short batches come.
    assert len(run.new_shape_steps_ns) == 1
    assert feed.restarts >= 1 and run.steps >= 10
    assert any("first step of each new batch shape (1)" in n for n in run.notes)


def test_the_report_line_names_the_mode_and_the_times():
    from dataclasses import replace

    from pipediag.report.terminal.diagnose import new_shape_text
    from tests.summaries import summary

    m = replace(summary("pipeline", 20), new_shape_steps_ms=(1234.4,))
    assert new_shape_text(m) == ("pipeline: first step of each new batch shape (a retrace per input shape): 1234 ms, "
                                 "kept out of the timings")
