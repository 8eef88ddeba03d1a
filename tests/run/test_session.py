"""`pipediag run` on an eager custom training loop: the hooks on Dataset iteration, the observed
steps, the windows in the real loop, the verdict, and the datasets the script iterated."""

import json
from dataclasses import replace

import pytest

from tests.run.scripts import QUICK, run_command, run_here, write

# windows long enough that the script's Ctrl-C lands inside the first one
QUICK_LONG = replace(QUICK, max_seconds=30.0, min_seconds=30.0)

LOOP = """
def slow(x):
    time.sleep(0.02)  # the input side: 20 ms a batch, the step well under a millisecond
    return x

def make_dataset():
    ds = tf.data.Dataset.from_tensor_slices(np.arange(4000, dtype=np.float32).reshape(-1, 4))
    return ds.map(lambda x: tf.py_function(slow, [x], tf.float32)).batch(8)

train = make_dataset()
val = tf.data.Dataset.from_tensor_slices(np.ones((64, 4), np.float32)).batch(8)
w = tf.Variable(tf.ones([4, 1]))
opt = tf.keras.optimizers.SGD(0.001)
seen = 0
for epoch in range(50):
    for step, batch in enumerate(train):
        # the loop checks what it gets: the swap must keep the batch's structure
        assert batch.shape[1:] == (4,) and batch.dtype == tf.float32, batch
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.matmul(tf.reshape(batch, [-1, 4]), w))
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
        seen += 1
        if step == 30:
            break
    for x, y in zip(val, val):  # a validation pass over a second dataset
        pass
"""


@pytest.mark.slow
def test_an_eager_loop_is_observed_swapped_and_found_input_bound(tmp_path):
    path = write(tmp_path, "train.py", LOOP)
    result = run_here(path)
    d = result.diagnosis
    assert result.fault is None and result.ending.how == "stopped", (result.fault, result.ending)
    assert d.status == "complete"
    assert set(d.modes) == {"pipeline", "synthetic", "input_only"}
    assert d.runs["synthetic"].steps >= 5 and d.runs["pipeline"].steps >= 8
    # a 20 ms sleep per batch against a sub-millisecond step: far from any threshold
    assert d.verdict.bottleneck == "input", (d.verdict, {n: m.batches_per_sec for n, m in d.modes.items()})
    # the loop's tape, read eagerly in the main thread, counted from the windows' thread; an input
    # verdict gets no tf_function fix (a faster step would not train faster)
    eager = d.step.eager
    assert eager is not None and eager.eager and eager.compiled_missing.startswith("a script's own loop"), eager
    assert "tf_function" not in [f.kind for f in d.fixes]
    site = d.settings["dataset_site"]
    assert site["file"] == path and site["function"] == "make_dataset"
    assert d.settings["hook"] == "loop"
    assert "make_dataset" in d.target and "train.py" in d.target and "training dataset built at" in d.target
    kinds = {(s["number"], s["kind"]) for s in d.settings["datasets"]}
    assert (1, "loop") in kinds and len(kinds) == 2  # train and val, val not diagnosed
    assert any("also iterated: dataset 2" in n for n in d.notes)
    assert any("weights changed" in n for n in d.notes)


@pytest.mark.slow
def test_the_command_runs_the_script_with_its_arguments_and_writes_the_json(tmp_path):
    path = write(tmp_path, "args.py", """
    assert sys.argv[1:] == ["--epochs", "2"], sys.argv
    ds = tf.data.Dataset.range(100000).batch(4)
    for b in ds:
        pass
    """)
    out = tmp_path / "run.json"
    p = run_command("--quiet", "--observe-steps", "12", "--window-seconds", "0.5", "--no-tuned", "--no-anatomy",
                    "--json", str(out), "--html", str(tmp_path / "run.html"), "--samples-csv",
                    str(tmp_path / "samples.csv"), path, "--epochs", "2")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "<html" in (tmp_path / "run.html").read_text().lower()
    assert (tmp_path / "samples.csv").read_text().count("\n") > 2
    saved = json.loads(out.read_text())
    assert saved["kind"] == "diagnosis" and saved["settings"]["source"] == "pipediag run"
    assert saved["modes"]["synthetic"] is not None and saved["modes"]["input_only"] is not None
    assert "pipediag run" in p.stdout or "args.py" in p.stdout


def test_a_module_runs_as_python_m_runs_it(tmp_path, monkeypatch):
    from pipediag.run.launch import ScriptTarget
    from pipediag.run.script import run_script
    from pipediag.run.session import ScriptPlan
    write(tmp_path, "pipediag_run_test_module.py", """
    assert __name__ == "__main__" and sys.argv[1:] == ["--lr", "0.1"], (__name__, sys.argv)
    for batch in tf.data.Dataset.range(100000).batch(2):
        pass
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run_script(ScriptTarget(None, "pipediag_run_test_module", ("--lr", "0.1")),
                        ScriptPlan(rule=QUICK, observe_steps=12, anatomy=False, modes=("synthetic", "pipeline")))
    assert result.ending.how == "stopped" and result.fault is None
    assert result.diagnosis.target.startswith("-m pipediag_run_test_module")
    assert set(result.diagnosis.modes) == {"synthetic", "pipeline"}


def test_ctrl_c_during_a_window_keeps_what_the_window_measured(tmp_path):
    path = write(tmp_path, "late.py", """
    import signal
    steps = 0
    for batch in tf.data.Dataset.range(10**6).batch(2):
        steps += 1
        if steps == 40:  # past the 2 + 12 observed steps: inside the synthetic window
            os.kill(os.getpid(), signal.SIGINT)
    """)
    result = run_here(path, rule=QUICK_LONG)
    d = result.diagnosis
    assert result.ending.how == "interrupted" and d.status == "interrupted"
    assert d.runs["pipeline"].steps == 12 and d.runs["synthetic"].steps > 0
    assert d.runs["synthetic"].stop_reason == "interrupted"
    # what the cut-short window measured is shown, but no verdict rests on it
    assert d.verdict is None and any(n.startswith("inconclusive: the synthetic window") for n in d.notes)
