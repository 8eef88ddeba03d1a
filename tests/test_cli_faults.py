"""Faults at run time, with real processes: `python -m pipediag` on small builders written into
tmp_path. A pipeline or step that stalls, SIGTERM. Each test checks the exit code, the partial
files, and that the process ended (subprocess returns) although a thread was stuck. Outer timeouts
are generous and nothing is timed. A user's code that raises or calls sys.exit leaves no thread
stuck: those tests run the command line's `main` in this process (`cli_main`: the same exit code,
files and output; a SystemExit that got through would fail the test)."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BUILDERS = '''
import os
import time

import tensorflow as tf

STEP_CALLS = [0]


def _hang_after(after, marker):
    def read(x):
        if int(x) >= after:
            if marker:
                open(marker, "w").close()
            time.sleep(100_000)  # a network read that never returns
        return x
    return read


def hang_read(after=0, marker=""):
    read = _hang_after(int(after), marker)

    def hang_read(x):
        return tf.py_function(read, [x], tf.int64)
    ds = tf.data.Dataset.range(10_000_000).map(hang_read)
    return ds.map(lambda x: tf.ones([4]) * tf.cast(x, tf.float32)).batch(8)


def hang_from_batch_size_16(batch_size=8):
    read = _hang_after(300 if batch_size >= 16 else 10**9, "")

    def hang_read(x):
        return tf.py_function(read, [x], tf.int64)
    ds = tf.data.Dataset.range(10_000_000).map(hang_read)
    return ds.map(lambda x: tf.ones([4]) * tf.cast(x, tf.float32)).batch(batch_size)


def fine():
    return tf.data.Dataset.range(10_000_000).map(lambda x: tf.ones([4]) * tf.cast(x, tf.float32)).batch(8)


def stuck_step():
    def step(batch):
        STEP_CALLS[0] += 1
        if STEP_CALLS[0] > 20:
            time.sleep(100_000)  # a device that never finishes
        return batch
    return step


def raise_after(after=400):
    def read(x):
        if int(x) >= int(after):
            raise ValueError(f"corrupt record {int(x)}")
        return x

    def parse_record(x):
        return tf.py_function(read, [x], tf.int64)
    ds = tf.data.Dataset.range(10_000_000).map(parse_record)
    return ds.map(lambda x: tf.ones([4]) * tf.cast(x, tf.float32)).batch(8)


def step_raising_on_late_batches():
    def step(batch):
        if float(batch[0][0]) >= 400:  # the synthetic mode's constant batch is the first one (0)
            raise RuntimeError("device error on a real batch")
        return batch
    return step


def marking_step():
    marker = os.environ["PIPEDIAG_TEST_MARKER"]

    def step(batch):
        STEP_CALLS[0] += 1
        if STEP_CALLS[0] == 30:
            open(marker, "w").close()
        return batch
    return step
'''


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "faults.py"
    path.write_text(textwrap.dedent(BUILDERS))
    return lambda name: f"{path}:{name}"


def _env(**extra):
    return dict(os.environ, PYTHONPATH=ROOT, COLUMNS="100", **extra)


def pipediag(*args, timeout=240, **env):
    return subprocess.run([sys.executable, "-m", "pipediag", *args], capture_output=True, text=True,
                          env=_env(**env), timeout=timeout, cwd=ROOT)


def _outputs(tmp_path):
    out, page, samples = tmp_path / "run.json", tmp_path / "run.html", tmp_path / "samples.csv"
    return (out, page, samples), ["--json", str(out), "--html", str(page), "--samples-csv", str(samples)]


def _no_temp_files(folder):
    return [p.name for p in folder.iterdir() if p.name.startswith(".pipediag-")] == []


@pytest.mark.slow
def test_a_pipeline_that_stalls_ends_the_run_with_its_stage_named_and_every_file(spec, tmp_path):
    (out, page, samples), files = _outputs(tmp_path)
    result = pipediag("diagnose", spec("hang_read"), "--arg", "after=400", "--max-seconds", "1",
                      "--stall-timeout", "3", *files)
    assert result.returncode == 4, result.stderr
    assert "[STALLED:" in result.stdout  # "partial report" may wrap
    data = json.loads(out.read_text())
    assert data["status"] == "stalled"
    assert data["modes"]["synthetic"]["steps"] > 0  # measured before the stall, kept
    stall = data["stall"]
    assert stall["mode"] == "pipeline" and "waiting for the next batch" in stall["what"]
    assert stall["stage"] == "map(hang_read)"
    assert "STALLED: partial report" in page.read_text()
    assert len(samples.read_text().splitlines()) > 5
    assert _no_temp_files(tmp_path)


@pytest.mark.slow
def test_a_first_batch_that_never_comes_is_a_stall_too(spec, tmp_path):
    """A quarter into the wait (30 s by default), each stage is read fresh while the first batch is
    still awaited, and where it waits is said at once; the stall's report names it from those reads."""
    out = tmp_path / "run.json"
    result = pipediag("diagnose", spec("hang_read"), "--max-seconds", "1", "--stall-timeout", "3", "--json", str(out))
    assert result.returncode == 4, result.stderr
    said = " ".join(result.stderr.split())  # the progress display, its lines unwrapped
    assert "map(hang_read) gives nothing when read fresh; the stages before it yield" in said, said
    data = json.loads(out.read_text())
    assert data["status"] == "stalled" and data["stall"]["mode"] == "first batch"
    assert data["stall"]["stage"] == "map(hang_read)"
    probe = data["stall"]["probe"]
    assert [(r["stage"], r["state"]) for r in probe] == [("RangeDataset", "yields"), ("map(hang_read)", "nothing")]
    assert data["stall"]["probed_after_s"] < data["stall"]["waited_s"]  # read while the batch was awaited
    assert data["verdict"] is None and data["modes"]["synthetic"] is None  # nothing was measured: nothing guessed


@pytest.mark.slow
def test_a_step_that_does_not_return_is_a_stall_named_as_the_step(spec, tmp_path):
    out = tmp_path / "run.json"
    result = pipediag("diagnose", spec("fine"), "--step", spec("stuck_step"), "--max-seconds", "1",
                      "--stall-timeout", "3", "--json", str(out), "--quiet")
    assert result.returncode == 4, result.stderr
    stall = json.loads(out.read_text())["stall"]
    assert stall["mode"] == "synthetic" and "inside the step" in stall["what"] and stall["stage"] is None


def _end(process):
    """Kill a run the test gave up on, and close its pipes (no unclosed files left to warn later)."""
    if process.poll() is None:
        process.kill()
    process.communicate()


def _wait_for(path, process, timeout_s=180):
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "the run never reached the point to signal it"
        time.sleep(0.2)


@pytest.mark.slow
def test_sigterm_writes_the_partial_report_and_exits_143(spec, tmp_path):
    (out, page, samples), files = _outputs(tmp_path)
    marker = tmp_path / "stepping"
    process = subprocess.Popen([sys.executable, "-m", "pipediag", "diagnose", spec("fine"), "--step",
                                spec("marking_step"), "--max-seconds", "60", *files], cwd=ROOT,
                               env=_env(PIPEDIAG_TEST_MARKER=str(marker)), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(marker, process)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        _end(process)
    assert process.returncode == 143, stderr
    assert "[INTERRUPTED:" in stdout
    data = json.loads(out.read_text())
    assert data["status"] == "interrupted" and data["modes"]["synthetic"]["steps"] > 0
    assert page.exists() and samples.exists() and _no_temp_files(tmp_path)


@pytest.mark.slow
def test_sigterm_while_a_pipeline_hangs_still_ends_the_process(spec, tmp_path):
    out = tmp_path / "run.json"
    marker = tmp_path / "hanging"
    process = subprocess.Popen([sys.executable, "-m", "pipediag", "diagnose", spec("hang_read"), "--arg", "after=400",
                                "--arg", f"marker={marker}", "--max-seconds", "1", "--stall-timeout", "600",
                                "--json", str(out), "--quiet"], cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(marker, process)
        time.sleep(0.5)  # let the main thread reach its wait for the batch
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        _end(process)
    assert process.returncode == 143, stderr
    data = json.loads(out.read_text())
    assert data["status"] == "interrupted" and data["modes"]["synthetic"]["steps"] > 0


@pytest.mark.slow
def test_a_pipeline_raising_mid_run_keeps_the_modes_before_and_shows_the_users_traceback(spec, tmp_path, cli_main):
    (out, page, samples), files = _outputs(tmp_path)
    result = cli_main("diagnose", spec("raise_after"), "--max-seconds", "1", *files)
    assert result.returncode == 1, result.stderr
    assert "corrupt record" in result.stderr and "HINT:" in result.stderr
    assert "in read" in result.stderr  # the user's frame, in their file
    assert "[FAILED:" in result.stdout  # "partial report" may wrap
    data = json.loads(out.read_text())
    assert data["status"] == "failed" and data["modes"]["synthetic"]["steps"] > 0
    assert any(n.startswith("pipeline mode failed: your pipeline raised") for n in data["notes"])
    assert page.exists() and samples.exists() and _no_temp_files(tmp_path)


@pytest.mark.slow
def test_a_step_raising_mid_run_keeps_the_modes_before(spec, tmp_path, cli_main):
    out = tmp_path / "run.json"
    result = cli_main("diagnose", spec("fine"), "--step", spec("step_raising_on_late_batches"), "--max-seconds", "1",
                      "--json", str(out), "--quiet")
    assert result.returncode == 1, result.stderr
    assert "device error on a real batch" in result.stderr
    data = json.loads(out.read_text())
    assert data["status"] == "failed" and data["modes"]["synthetic"]["steps"] > 0
    assert any(n.startswith("pipeline mode failed: your step raised RuntimeError") for n in data["notes"])


@pytest.mark.slow
def test_compare_stops_at_a_turn_that_stalls_and_keeps_the_rounds_before(spec, tmp_path):
    out = tmp_path / "cmp.json"
    result = pipediag("compare", spec("fine"), spec("hang_read"), "--arg-b", "after=2000", "--max-seconds", "20",
                      "--stall-timeout", "3", "--json", str(out), "--quiet")
    assert result.returncode == 4, result.stderr
    data = json.loads(out.read_text())
    assert data["status"] == "stalled" and data["comparison"]["stop_reason"] == "stalled"
    assert any(n.startswith("B's turn stalled") for n in data["notes"])


@pytest.mark.slow
def test_sweep_stops_at_the_batch_size_that_stalls_and_keeps_the_ones_before(spec, tmp_path):
    out = tmp_path / "sweep.json"
    result = pipediag("sweep", spec("hang_from_batch_size_16"), "--batch-sizes", "8,16,32", "--max-seconds", "1",
                      "--stall-timeout", "3", "--json", str(out), "--quiet")
    assert result.returncode == 4, result.stderr
    data = json.loads(out.read_text())
    assert data["status"] == "stalled"
    assert [(p["batch_size"], p["status"]) for p in data["points"]] == [(8, "ok"), (16, "stalled"), (32, "skipped")]
    assert "map(hang_read)" in data["notes"][0]


@pytest.mark.slow
def test_a_service_worker_killed_during_scale_keeps_what_was_measured_and_leaves_no_server(tmp_path):
    """Whenever the kill lands (the worker still starting, or serving batches), the run ends with
    the local modes kept, the files written, and every server process gone: failed (exit 1, the
    service's error shown) or stalled (exit 4, the fetch got nothing)."""
    psutil = pytest.importorskip("psutil")
    out = tmp_path / "scale.json"
    fixtures = os.path.join(ROOT, "tests", "fixtures", "pipelines.py")
    process = subprocess.Popen([sys.executable, "-m", "pipediag", "scale", f"{fixtures}:in_memory", "--step",
                                f"{fixtures}:light_step", "--workers", "1", "--max-seconds", "20", "--stall-timeout",
                                "10", "--json", str(out), "--quiet"], cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    servers, workers = [], []
    try:
        deadline = time.monotonic() + 240
        while not workers and time.monotonic() < deadline and process.poll() is None:
            servers = [c for c in psutil.Process(process.pid).children()
                       if "pipediag.service.server" in " ".join(c.cmdline())]
            workers = [c for c in servers if " worker " in " ".join(c.cmdline())]
            time.sleep(0.2)
        assert workers, "no worker process was started"
        time.sleep(3)
        workers[0].kill()
        stdout, stderr = process.communicate(timeout=240)
    finally:
        _end(process)
    assert process.returncode in (1, 4), stderr
    data = json.loads(out.read_text())
    assert data["status"] in ("failed", "stalled")
    assert data["modes"]["synthetic"]["steps"] > 0  # measured before the service: kept
    assert not any(s.is_running() and s.status() != psutil.STATUS_ZOMBIE for s in servers)


# The user's own exits and threads (issue 27, item 3), with the scripted fixtures.
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "pipelines.py")


def _fixture(name):
    return f"{FIXTURES}:{name}"


@pytest.mark.slow
def test_a_builder_that_calls_sys_exit_is_said_in_one_line_and_exits_1(cli_main):
    """sys.exit(3) in the builder once ended pipediag silently with 3: compare --fail-if-slower's code."""
    result = cli_main("diagnose", _fixture("exiting_builder"), "--max-seconds", "1")
    assert result.returncode == 1, result.stderr
    said = " ".join(result.stderr.split())
    assert "error: your dataset builder exited: sys.exit(3) at pipelines.py:" in said
    assert "HINT: pipediag calls your functions inside its own process" in said
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_step_that_calls_sys_exit_in_compare_is_said_and_exits_1(cli_main):
    result = cli_main("compare", _fixture("fast_map"), _fixture("fast_map"), "--step", _fixture("exiting_step"),
                      "--max-seconds", "5", "--quiet")
    assert result.returncode == 1, result.stderr
    said = " ".join(result.stderr.split())
    assert "error: your step" in said and "exited: sys.exit(3) at pipelines.py:" in said


@pytest.mark.slow
def test_a_thread_the_builder_leaves_running_does_not_keep_pipediag_from_ending(tmp_path):
    """Without os._exit the interpreter joins the non-daemon thread forever (killed by `timeout`
    at 120 s in the report of issue 27); the subprocess's own timeout is the failure here."""
    out = tmp_path / "run.json"
    result = pipediag("diagnose", _fixture("thread_left_running"), "--max-seconds", "1", "--json", str(out),
                      "--quiet", timeout=400)
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["status"] == "complete"  # written before the exit
    said = " ".join(result.stderr.split())  # the builder may be called more than once: a thread each time
    assert re.search(r"note: your code left \d+ thread\(s\) running \(prefetcher: "
                     r"thread_left_running\.<locals>\.prefetch_forever", said), said


@pytest.mark.slow
def test_compare_keeps_its_rounds_when_the_users_code_raises_mid_rounds(tmp_path, cli_main, monkeypatch):
    # fails_on_pass counts its passes in a module global: a fresh copy of the fixtures' module, as a
    # fresh process would load it (pipediag keeps a loaded file in sys.modules).
    monkeypatch.delitem(sys.modules, "pipediag_user_pipelines", raising=False)
    out = tmp_path / "cmp.json"
    result = cli_main("compare", _fixture("fast_map"), _fixture("fails_on_pass"), "--step", _fixture("light_step"),
                      "--max-seconds", "60", "--json", str(out))
    assert result.returncode == 1, result.stderr
    assert "[FAILED:" in result.stdout  # the partial report, then the user's error
    said = " ".join(result.stderr.split())
    assert "your pipeline (in B's turn) raised" in said and "lost the connection to the data server" in said
    assert "in read" in result.stderr  # the user's frame
    data = json.loads(out.read_text())
    assert data["status"] == "failed" and data["comparison"]["stop_reason"] == "failed"
    assert len(data["rounds"]) >= 1  # the rounds before the failing turn are kept
    assert data["notes"][0].startswith("B's turn failed: your pipeline (in B's turn) raised")
