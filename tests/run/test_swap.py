"""The windows swap what the loop's iterator yields, the loop unchanged; `--then continue` gives
the loop its real iterator back where it was."""

import json

import pytest

from tests.run.scripts import run_here, write

ORDERED = """
OUT = sys.argv[1]
ds = tf.data.Dataset.range(300).map(lambda i: tf.fill([2, 3], i)).batch(1)
seen = []
step = tf.function(lambda b: tf.reduce_sum(b))  # a tf.function step, fed per batch from Python
for batch in ds:
    assert batch.shape == (1, 2, 3) and batch.dtype == tf.int64, batch
    step(batch)
    seen.append(int(batch[0, 0, 0]))
with open(OUT, "w") as f:
    json.dump(seen, f)
"""


def test_then_continue_resumes_the_real_pipeline_where_it_was(tmp_path):
    out = tmp_path / "seen.json"
    path = write(tmp_path, "ordered.py", "import json\n" + ORDERED)
    result = run_here(path, str(out), then="continue")
    d = result.diagnosis
    assert result.ending.how == "finished" and result.fault is None
    assert d.status == "complete" and {"synthetic", "input_only"} <= set(d.modes)
    seen = json.loads(out.read_text())
    observed = 2 + 12  # warm-up and observed steps, all real
    assert seen[:observed] == list(range(observed))
    # the windows fed the loop repeats and fresh batches; then the real iterator went on at `observed`
    assert seen[-(300 - observed):] == list(range(observed, 300))
    assert len(seen) > 300
    assert any("went on with the real pipeline" in n for n in d.notes)


def test_then_stop_ends_the_script_after_the_diagnosis(tmp_path):
    out = tmp_path / "seen.json"
    path = write(tmp_path, "ordered.py", "import json\n" + ORDERED)
    result = run_here(path, str(out))
    assert result.ending.how == "stopped" and result.fault is None
    assert not out.exists()  # the script did not go on to its end


PARSE_LOOP = """
def parse(x):
    return tf.cast(x, tf.float32) * 2.0

ds = tf.data.Dataset.range(100000).map(parse).batch(32)
for batch in ds:
    assert batch.shape == (32,) and batch.dtype == tf.float32
"""


@pytest.mark.slow
def test_the_tuned_window_and_anatomy_run_in_the_loop(tmp_path):
    path = write(tmp_path, "tuned.py", PARSE_LOOP)
    result = run_here(path, modes=("synthetic", "pipeline", "input_only", "tuned"), anatomy=True)
    d = result.diagnosis
    assert result.fault is None and d.status == "complete", d.notes
    assert "tuned" in d.modes and d.tuned_check is not None
    assert d.anatomy is not None
    assert d.tuning  # the planned changes, applied or with their reason


@pytest.mark.slow
def test_free_input_timed_again_runs_in_a_window_of_the_scripts_steps(tmp_path, monkeypatch):
    """Where a tuned run fed the step faster than the synthetic window had (forced here:
    analysis.ablation.runs_above_free), the step is timed on the loop's last batch again, in a
    window of the script's own steps, and the ablation keeps it as its last run."""
    from pipediag.analysis import ablation as pure

    monkeypatch.setattr(pure, "runs_above_free", lambda variants, free_ci: [
        v for v in variants if v.role in pure.CHANGED_ROLES])
    path = write(tmp_path, "tuned.py", PARSE_LOOP)
    result = run_here(path, modes=("synthetic", "pipeline", "input_only", "tuned"))
    d = result.diagnosis
    assert result.fault is None and d.status == "complete", d.notes
    again = d.ablation.variants[-1]
    assert again.role == "free_input" and again.steps > 0 and again.batches_per_sec, d.ablation.variants
    assert any("the step was timed on synthetic data again after the tuned runs" in n for n in d.notes)


VALIDATING_FIT = """
x = np.random.rand(800, 8).astype(np.float32)
y = (x.sum(axis=1) > 4).astype(np.float32)
train = tf.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat()

def slow(a):
    time.sleep(0.03)
    return a

val = tf.data.Dataset.from_tensor_slices((x[:160], y[:160])).batch(16).map(  # 10 batches: 0.3 s a pass
    lambda a, b: (tf.ensure_shape(tf.numpy_function(slow, [a], tf.float32), [None, 8]), b))
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(train, validation_data=val, epochs=400, steps_per_epoch=50, verbose=0)
"""


@pytest.mark.slow
def test_a_windows_steps_leave_out_the_fits_validation(tmp_path):
    """Each epoch of 50 short steps ends with a 0.3-s validation pass. In the synthetic window that
    time is no step: it stays out of the step times (each well under the pass) and the note says
    how much there was."""
    path = write(tmp_path, "validating.py", VALIDATING_FIT)
    result = run_here(path)
    d = result.diagnosis
    assert result.fault is None and d.status == "complete", d.notes
    synthetic = d.runs["synthetic"]
    assert synthetic.steps >= 50, synthetic  # the window spans at least one epoch's end
    assert max(synthetic.compute_ns) < 250_000_000, max(synthetic.compute_ns)
    assert any("s of the window were spent outside any step" in n for n in synthetic.notes), synthetic.notes


TINY_LOOP = """
ds = tf.data.Dataset.range(100000).map(lambda i: tf.fill([4], tf.cast(i, tf.float32))).batch(8)
step = tf.function(lambda b: tf.reduce_sum(b))
for batch in ds:
    step(batch)
"""


def test_the_hand_over_beside_the_step_runs_in_a_window_of_the_scripts_steps(tmp_path, monkeypatch):
    """Where the verdict asks for it (forced here: verdict.handover_edge.wants_beside_step), the ready
    batch is handed over beside the script's own step, in a window of its steps."""
    from pipediag.verdict import handover_edge

    monkeypatch.setattr(handover_edge, "wants_beside_step", lambda *args: True)
    result = run_here(write(tmp_path, "tiny.py", TINY_LOOP))
    d = result.diagnosis
    assert result.fault is None and d.status == "complete", d.notes
    assert d.handover is not None and d.handover.beside_step_batches and d.handover.beside_step_batches > 0


def test_a_script_short_of_steps_keeps_the_hand_over_alone_and_says_why(tmp_path, monkeypatch):
    from pipediag.api.gather import Gathering
    from pipediag.run.budget import OutOfSteps

    def short(self):
        raise OutOfSteps("handover_beside_step window", 3, 10)

    monkeypatch.setattr(Gathering, "handover_beside_step", short)
    result = run_here(write(tmp_path, "tiny.py", TINY_LOOP))
    d = result.diagnosis
    assert result.fault is None and d.status == "complete", d.notes
    assert d.handover is not None and d.handover.beside_step_fetch_ms_mean is None
    assert any("not timed beside the step: the script had 3 step(s) left" in n for n in d.notes)
