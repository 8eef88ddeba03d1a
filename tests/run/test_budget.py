"""A fit whose steps are known: the observation and the windows planned inside them (run.budget on
scripted numbers), a short fit diagnosed to the end, one too short said so with what to do, and a
loop whose every epoch starts with a wait (analysis.epoch_starts in the real loop)."""

import pytest

from pipediag.records.run import StopRule
from pipediag.run.budget import (
    OutOfSteps,
    StepBudget,
    capped,
    fits,
    needed,
    observe_cap,
    plan_text,
    shortfall,
    window_steps,
)
from tests.run.scripts import QUICK, run_here, write

RULE = StopRule(warmup_steps=5, min_steps=20)


def test_the_text_classification_tutorial_fits_with_shorter_windows():
    budget = StepBudget(total=2510, how="model.fit: 10 epoch(s) x 251 steps", steps_per_epoch=251, epochs=10)
    assert fits(budget, RULE) and needed(RULE) == 52
    assert observe_cap(budget, RULE) == 1004
    left = 2510 - 1004
    synthetic = window_steps(left, RULE, 2, "synthetic window")  # half kept for the tuned windows
    assert synthetic == 752
    assert capped(RULE, synthetic).max_steps == 747  # warm-up included in the window's steps
    assert window_steps(30, RULE, 2, "ablation") == 28  # the last window that fits takes what is left
    with pytest.raises(OutOfSteps) as short:
        window_steps(20, RULE, 1, "tuned window")
    assert short.value.left == 20 and short.value.needed == 27
    assert "1004" in plan_text(budget, RULE) and "2510" in plan_text(budget, RULE)


def test_a_first_pass_that_fills_a_cache_is_not_charged_to_the_observations_share():
    """The TF load-images tutorial on 2026-12-03: 3 epochs x 25 steps, the first epoch filling a
    cache. The observation's 30 steps left 5 timed after the fill: inconclusive. Its share is of
    the steps after the fill, and the synthetic window still has its minimum after it."""
    budget = StepBudget(total=75, how="model.fit: 3 epoch(s) x 25 steps", steps_per_epoch=25, epochs=3)
    assert observe_cap(budget, RULE) == 30
    assert observe_cap(budget, RULE, warmup_steps=5) == 30  # the rule's own warm-up: as before
    cap = observe_cap(budget, RULE, warmup_steps=25)
    assert cap == 45  # 25 + max(20 timed, 40% of the 50 after the fill)
    assert window_steps(75 - cap, RULE, 1, "synthetic window") >= RULE.warmup_steps + RULE.min_steps
    # a fill so long that the timed steps would crowd out the synthetic window: bounded by its minimum
    assert observe_cap(budget, RULE, warmup_steps=40) == 75 - 25 - 2
    # a long fit: the share after the fill is the larger one
    long = StepBudget(total=2510, how="model.fit: 10 epoch(s) x 251 steps", steps_per_epoch=251, epochs=10)
    assert observe_cap(long, RULE, warmup_steps=251) == 251 + int((2510 - 251) * 0.4)


def test_a_fit_too_short_for_any_plan_says_what_to_do():
    budget = StepBudget(total=40, how="model.fit: 2 epoch(s) x 20 steps", steps_per_epoch=20, epochs=2)
    assert not fits(budget, RULE)
    what, hint = shortfall(budget, RULE)
    assert "only 40 steps" in what and "at least 52" in what
    assert "at least 3 epochs" in hint and "pipediag diagnose" in hint


FIT = """
x = np.random.rand(320, 8).astype(np.float32)
y = (x.sum(axis=1) > 4).astype(np.float32)
train = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)  # 20 steps an epoch
val = tf.data.Dataset.from_tensor_slices((x[:64], y[:64])).batch(16)
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(train, validation_data=val, epochs=int(os.environ["EPOCHS"]), verbose=0)
raise SystemExit("the fit ended before pipediag stopped the script")
"""


@pytest.mark.slow
def test_a_short_fit_is_planned_to_end_its_windows_in_time(tmp_path, monkeypatch):
    monkeypatch.setenv("EPOCHS", "12")  # 240 steps; QUICK needs 2 + 5 per window
    path = write(tmp_path, "fit.py", FIT)
    result = run_here(path, observe_steps=None, rule=QUICK)
    d = result.diagnosis
    assert result.ending.how == "stopped" and result.fault is None, (result.ending, result.fault, d.notes)
    assert d.status == "complete" and d.verdict is not None
    assert d.settings["step_budget"] == {"total": 240, "how": "model.fit: 12 epoch(s) x 20 steps, the dataset's "
                                         "cardinality", "fits": True}
    assert any(n.startswith("the script runs 240 steps") for n in d.notes), d.notes
    assert any(n.startswith("the windows' step caps") for n in d.notes), d.notes
    used = d.runs["pipeline"].steps + d.runs["pipeline"].warmup_steps + d.runs["synthetic"].steps
    assert used < 240


@pytest.mark.slow
def test_a_short_fit_whose_first_epoch_fills_a_cache_still_times_the_observation(tmp_path, monkeypatch):
    """3 epochs of 20 steps, the first filling the cache: the observation's share (24 steps) would
    leave 4 timed after the fill; it is taken of the steps after the fill instead, and the
    synthetic window still has enough steps for a verdict (10)."""
    monkeypatch.setenv("EPOCHS", "3")
    path = write(tmp_path, "fit.py", FIT.replace(".batch(16)  # 20", ".batch(16).cache()  # 20"))
    result = run_here(path, observe_steps=None, rule=QUICK)
    d = result.diagnosis
    assert result.fault is None, (result.ending, result.fault, d.notes)
    pipeline = d.runs.get("pipeline")
    assert pipeline is not None and pipeline.warmup_steps == 20 and pipeline.steps >= QUICK.min_steps, d.notes
    assert d.runs.get("synthetic") is not None and d.runs["synthetic"].steps >= QUICK.min_steps, d.notes
    assert d.verdict is not None and d.verdict.bottleneck != "inconclusive", d.verdict
    assert any("counted after the first pass that filled the cache (20 steps)" in n for n in d.notes), d.notes


@pytest.mark.slow
def test_a_fit_too_short_ends_inconclusive_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("EPOCHS", "1")  # 10 steps: QUICK needs 2 x (2 + 5) + 2 = 16
    path = write(tmp_path, "fit.py", FIT.replace(".batch(16)  # 20", ".batch(32)  # 10"))
    result = run_here(path, observe_steps=None, rule=QUICK)
    d = result.diagnosis
    assert result.ending.how == "exited"
    assert d.verdict is None and d.status == "interrupted"
    assert result.fault is not None and "only 10 steps" in result.fault.message, result.fault
    assert "epochs" in result.fault.hint and "pipediag diagnose" in result.fault.hint
    assert d.settings["step_budget"]["fits"] is False


LOOP = """
def slow_first(i):
    if int(i) == 0:
        time.sleep(0.3)  # each new iterator starts with a wait (a shuffle buffer refill, say)
    return i

ds = tf.data.Dataset.range(40).map(lambda i: tf.py_function(slow_first, [i], tf.int64)).batch(2)  # 20 a pass
w = tf.Variable(1.0)
for epoch in range(40):
    for batch in ds:
        w.assign_add(tf.cast(tf.reduce_sum(batch), tf.float32) * 1e-6)
"""


@pytest.mark.slow
def test_a_wait_at_each_epoch_start_is_its_own_finding(tmp_path):
    path = write(tmp_path, "loop.py", LOOP)
    result = run_here(path, observe_steps=70)
    d = result.diagnosis
    assert result.fault is None, result.fault
    starts = d.settings["epoch_starts"]
    assert starts["found"] and starts["starts"] >= 2 and starts["steps_per_epoch"] == 20, starts
    assert d.runs["pipeline"].steps <= 70 - starts["starts"]  # the start steps are out of the pipeline mode
    # 0.3 s at each start of 20 steps of well under a millisecond: the starts are what limits training
    assert starts["share"] > 0.5
    assert d.verdict.bottleneck == "input" and d.verdict.facts["start_limit"], d.verdict
    assert d.verdict.evidence[0].startswith("each epoch's start cost")
    assert d.fixes[0].kind == "one_iterator" and "repeat()" in d.fixes[0].code and "steps_per_epoch=20" in d.fixes[0].code


SHORT_EPOCHS = """
def slow_first(i):
    if int(i) == 0:
        time.sleep(0.05)  # each new iterator starts with a wait
    return i

ds = tf.data.Dataset.range(8).map(lambda i: tf.py_function(slow_first, [i], tf.int64)).batch(2)  # 4 a pass
w = tf.Variable(1.0)
for epoch in range(60):
    for batch in ds:
        w.assign_add(tf.cast(tf.reduce_sum(batch), tf.float32) * 1e-6)
"""


@pytest.mark.slow
def test_epochs_of_a_few_steps_have_their_starts_found(tmp_path):
    # epochs shorter than analysis.epoch_starts' 8 start steps: the TF custom-training walkthrough's
    # 4-batch epochs were read as steady steps before 2026-12-07, their starts left in the verdict's wait
    path = write(tmp_path, "loop.py", SHORT_EPOCHS)
    result = run_here(path, observe_steps=40)
    d = result.diagnosis
    assert result.fault is None, result.fault
    starts = d.settings["epoch_starts"]
    assert starts["found"] and starts["steps_per_epoch"] == 4 and starts["starts"] >= 8, starts
    assert starts["wait_per_start_ms"] > 40 and starts["steady_wait_median_ms"] < 10, starts
    assert d.verdict.bottleneck == "input" and d.verdict.facts["start_limit"], d.verdict
    assert d.fixes[0].kind == "one_iterator" and "range(4)" in d.fixes[0].code
