"""A run's Diagnosis is diagnose's: its JSON round trip re-renders, and `pipediag fix RUN.json`
patches the script's pipeline at its construction site (a builder function), or says why not."""

import io
import json

import pytest
from rich.console import Console

from pipediag.cli import main
from pipediag.records.files import write_json
from pipediag.report.terminal.diagnose import render_diagnosis
from pipediag.results.diagnose import read_json
from tests.run.scripts import run_here, write

GUARDED = """
def slow(x):
    time.sleep(0.01)
    return x

def make_dataset():
    ds = tf.data.Dataset.range(100000).map(lambda i: tf.cast(i, tf.float32))
    return ds.map(lambda x: tf.py_function(slow, [x], tf.float32)).batch(4)

if __name__ == "__main__":
    for batch in make_dataset():
        tf.reduce_sum(batch)
"""


@pytest.mark.slow
def test_a_runs_json_round_trips_and_fix_patches_the_builder_function(tmp_path, capsys):
    path = write(tmp_path, "train.py", GUARDED)
    result = run_here(path, modes=("synthetic", "pipeline", "input_only", "tuned"))
    d = result.diagnosis
    assert result.fault is None and d.status == "complete", d.notes
    saved = tmp_path / "run.json"
    write_json(d.to_dict(), str(saved))
    again = read_json(str(saved))
    assert again.target == d.target and again.settings["dataset_site"]["function"] == "make_dataset"
    console = Console(file=io.StringIO(), width=120)
    console.print(render_diagnosis(again))
    assert console.file.getvalue().startswith("pipediag run")
    assert main(["fix", str(saved), "--no-measure"]) == 0
    out = capsys.readouterr().out
    assert "train.py" in out and "num_parallel_calls" in out  # the serial map, made parallel, at its site


def test_fix_refuses_a_run_whose_dataset_was_built_at_the_top_level(tmp_path, capsys):
    path = write(tmp_path, "flat.py", """
ds = tf.data.Dataset.range(100000).batch(4)
for batch in ds:
    pass
""")
    d = run_here(path).diagnosis
    saved = tmp_path / "flat.json"
    write_json(d.to_dict(), str(saved))
    assert main(["fix", str(saved), "--no-measure"]) == 2
    err = capsys.readouterr().err
    assert "top level of the script" in err and "def make_dataset" in err
    assert json.loads(saved.read_text())["settings"]["dataset_site"]["line"] == 5
