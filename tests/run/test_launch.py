"""Bad inputs and faults of `pipediag run`, each one clear message with what was measured kept."""

import json
import os

import pytest

from tests.run.scripts import run_command, run_here, write

STEPS = """
ds = tf.data.Dataset.range(100000).batch(4)
for i, batch in enumerate(ds):
    if i == int(os.environ.get("AT", "6")):
        {action}
"""


@pytest.mark.slow
def test_the_scripts_error_is_reported_with_its_traceback_without_pipediag_frames(tmp_path):
    path = write(tmp_path, "boom.py", STEPS.format(action="raise ValueError('bad label')"))
    p = run_command("--observe-steps", "50", "--json", str(tmp_path / "r.json"), path)
    assert p.returncode == 1, p.stderr[-2000:]
    assert "ValueError: bad label" in p.stderr and "boom.py" in p.stderr
    traceback = p.stderr[p.stderr.index("Traceback"):]
    assert "pipediag" not in traceback.split("ValueError")[0].replace("pipediag's own frames", "")
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["status"] == "failed"
    assert saved["modes"]["pipeline"] is not None  # the steps before it are kept


def test_sys_exit_before_the_windows_says_what_was_measured(tmp_path):
    path = write(tmp_path, "leave.py", STEPS.format(action="sys.exit(3)"))
    result = run_here(path, observe_steps=50)
    assert result.ending.how == "exited" and result.ending.code == 3
    assert result.fault is not None and "sys.exit(3)" in result.fault.message
    assert result.diagnosis.status == "interrupted"


def test_no_dataset_within_the_first_batch_timeout(tmp_path):
    path = write(tmp_path, "idle.py", "time.sleep(60)\n")
    result = run_here(path, first_batch_timeout_s=1.0)
    assert result.fault is not None and result.fault.exit_code == 4
    assert "no tf.data dataset was iterated" in result.fault.message


def test_ctrl_c_gives_a_partial_report(tmp_path):
    path = write(tmp_path, "ctrlc.py", STEPS.format(action="import signal; os.kill(os.getpid(), signal.SIGINT)"))
    result = run_here(path, observe_steps=50)
    assert result.ending.how == "interrupted"
    assert result.diagnosis.status == "interrupted"
    assert result.diagnosis.runs["pipeline"].steps > 0



@pytest.mark.slow
def test_sigterm_during_the_observation_writes_the_partial_report(tmp_path):
    path = write(tmp_path, "term.py", STEPS.format(action="import signal; os.kill(os.getpid(), signal.SIGTERM)"))
    out = tmp_path / "t.json"
    p = run_command("--quiet", "--observe-steps", "50", "--json", str(out), path)
    assert p.returncode == 143, p.stderr[-2000:]
    assert json.loads(out.read_text())["status"] == "interrupted"
    assert os.path.getsize(out) > 0
