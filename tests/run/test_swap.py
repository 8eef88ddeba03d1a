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


@pytest.mark.slow
def test_the_tuned_window_and_anatomy_run_in_the_loop(tmp_path):
    path = write(tmp_path, "tuned.py", """
def parse(x):
    return tf.cast(x, tf.float32) * 2.0

ds = tf.data.Dataset.range(100000).map(parse).batch(32)
for batch in ds:
    assert batch.shape == (32,) and batch.dtype == tf.float32
""")
    result = run_here(path, modes=("synthetic", "pipeline", "input_only", "tuned"), anatomy=True)
    d = result.diagnosis
    assert result.fault is None and d.status == "complete", d.notes
    assert "tuned" in d.modes and d.tuned_check is not None
    assert d.anatomy is not None
    assert d.tuning  # the planned changes, applied or with their reason
