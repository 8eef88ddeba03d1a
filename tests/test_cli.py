"""The command line, run as users run it: `python -m pipediag` in a subprocess. Where a test is about
what the command says and returns (a usage error, arguments reaching the builder) rather than about
the process, `cli_main` (tests/conftest.py) runs the same `main` in this process, which saves each
a TensorFlow import of its own."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pipediag(*args, timeout=180):
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="100")
    return subprocess.run([sys.executable, "-m", "pipediag", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


def test_help_and_version():
    result = pipediag("--help")
    assert result.returncode == 0 and "diagnose" in result.stdout
    assert pipediag("--version").stdout.startswith("pipediag ")


@pytest.mark.slow
def test_bad_spec_is_a_usage_error_with_a_hint(cli_main):
    result = cli_main("diagnose", "no_colon_here")
    assert result.returncode == 2
    assert "is not a spec" in result.stderr and "HINT:" in result.stderr


@pytest.mark.slow
def test_missing_file_is_a_usage_error(cli_main):
    result = cli_main("diagnose", "does/not/exist.py:make")
    assert result.returncode == 2 and "no such file" in result.stderr


def test_unknown_option_is_a_usage_error():
    result = pipediag("diagnose", "--frobnicate")
    assert result.returncode == 2 and "unrecognized arguments: --frobnicate" in result.stderr and "HINT: see 'pipediag" in result.stderr


def test_target_and_demo_together_is_a_usage_error(fixture_spec):
    result = pipediag("diagnose", fixture_spec("in_memory"), "--demo")
    assert result.returncode == 2


def test_output_path_that_is_a_folder_is_refused_before_running(fixture_spec, tmp_path):
    result = pipediag("diagnose", fixture_spec("in_memory"), "--html", str(tmp_path))
    assert result.returncode == 2 and "is a folder" in result.stderr and "HINT:" in result.stderr


@pytest.mark.slow
def test_json_dash_pipes_the_diagnosis_alone_with_the_report_on_stderr(fixture_spec):
    """`pipediag diagnose ... --json - | jq .verdict`: standard output holds the JSON alone; a
    device output is written in place and stays a device."""
    import stat

    result = pipediag("diagnose", fixture_spec("fast_map"), "--step", fixture_spec("light_step"), "--max-seconds", "1",
                      "--json", "-", "--samples-csv", "/dev/null")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["kind"] == "diagnosis" and data["status"] == "complete"
    assert "Verdict" in result.stderr and "wrote /dev/null" in result.stderr
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_report_rerenders_a_saved_run_as_html_and_csv(tmp_path):
    from pipediag.records.files import write_json
    from tests.summaries import diagnosis

    saved, page, samples = tmp_path / "run.json", tmp_path / "run.html", tmp_path / "s.csv"
    write_json(diagnosis().to_dict(), str(saved))
    result = pipediag("report", str(saved), "--html", str(page), "--samples-csv", str(samples))
    assert result.returncode == 0, result.stderr
    assert "Modes" in result.stdout and f"wrote {page}" in result.stderr
    assert "<svg" in page.read_text() and samples.read_text().startswith("time_s,time_ns,mode,phase,")


@pytest.mark.slow
def test_users_failing_step_exits_1_with_their_traceback_only(fixture_spec, cli_main):
    result = cli_main("diagnose", fixture_spec("in_memory"), "--step", fixture_spec("raising_step"), "--quiet")
    assert result.returncode == 1, result.stderr
    assert "your step raised ValueError: shapes do not match in my_loss" in result.stderr
    assert "pipelines.py" in result.stderr
    assert f"pipediag{os.sep}modes" not in result.stderr and f"pipediag{os.sep}api" not in result.stderr
    assert "HINT:" in result.stderr


@pytest.mark.slow
def test_unbatched_dataset_exits_2_with_a_hint(fixture_spec, cli_main):
    result = cli_main("diagnose", fixture_spec("unbatched"), "--quiet")
    assert result.returncode == 2
    assert "no batch() in the pipeline" in result.stderr and "--batch-size" in result.stderr


@pytest.mark.slow
def test_builder_returning_a_list_exits_2(fixture_spec, cli_main):
    result = cli_main("diagnose", fixture_spec("not_a_dataset"), "--quiet")
    assert result.returncode == 2 and "not a tf.data.Dataset" in result.stderr


@pytest.mark.slow
def test_diagnose_writes_json_and_report_reprints_it(fixture_spec, tmp_path, cli_main):
    out, page, samples = tmp_path / "run.json", tmp_path / "run.html", tmp_path / "samples.csv"
    # 1-s windows, not 3: the input verdict rests on 16 serial 3-ms sleeps a batch (<= 21 batches/s)
    # against a light step on a constant batch (hundreds a second), a gap no window length narrows.
    # The diagnosis by `main` in this process; the saved run re-read by `report` processes of its own.
    result = cli_main("diagnose", fixture_spec("serial_sleep_map"), "--step", fixture_spec("light_step"),
                      "--max-seconds", "1", "--json", str(out), "--html", str(page), "--samples-csv", str(samples))
    assert result.returncode == 0, result.stderr
    assert "Verdict" in result.stdout and "INPUT" in result.stdout
    assert "synthetic mode" in result.stderr and "taking the first batch" in result.stderr  # the progress bars
    assert f"wrote {page}" in result.stderr
    html = page.read_text()
    assert "map(slow_read)" in html and html.count("<svg") == 3  # throughput, utilization, the anatomy's waterfall
    assert 'id="chart-waterfall"' in html
    modes = {line.split(",")[2] for line in samples.read_text().splitlines()[1:]}
    assert {"synthetic", "pipeline", "input_only", "tuned"} <= modes
    data = json.loads(out.read_text())
    assert ('id="ablation"' in html) == (data["tuning"]["ablation"] is not None)
    assert data["schema_version"] == 2 and data["verdict"]["bottleneck"] == "input"
    assert data["fixes"][0]["stage"] == "map(slow_read)"
    again = pipediag("report", str(out))
    assert again.returncode == 0
    assert "map(slow_read)" in again.stdout and "INPUT" in again.stdout
    rerendered = tmp_path / "again.html"
    quiet = pipediag("report", str(out), "--html", str(rerendered), "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    assert rerendered.read_text() == page.read_text()  # the JSON round-trips: the same page


@pytest.mark.slow
def test_ctrl_c_leaves_a_partial_report_in_every_output(fixture_spec, tmp_path):
    out, page, samples = tmp_path / "run.json", tmp_path / "run.html", tmp_path / "samples.csv"
    result = pipediag("diagnose", fixture_spec("in_memory"), "--step", fixture_spec("interrupting_step"),
                      "--max-seconds", "1", "--json", str(out), "--html", str(page), "--samples-csv", str(samples))
    assert result.returncode == 130, result.stderr
    # The header line wraps where the target's path is long (a worktree's): compare words, not lines.
    words = " ".join(result.stdout.split())
    assert "[INTERRUPTED: partial report]" in words and "Verdict" in result.stdout
    data = json.loads(out.read_text())
    assert data["status"] == "interrupted" and data["modes"]["synthetic"]["steps"] > 0
    assert data["verdict"]["confidence"] == "low"
    assert "INTERRUPTED: partial report" in page.read_text()
    assert len(samples.read_text().splitlines()) > 10


@pytest.mark.slow
def test_args_and_batch_size_reach_the_builder(fixture_spec, tmp_path, cli_main):
    out = tmp_path / "run.json"
    result = cli_main("diagnose", fixture_spec("builder_with_args"), "--batch-size", "6", "--arg", "scale=3.0",
                      "--max-seconds", "1", "--quiet", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["dataset"]["element"]["batch_size"] == 6
    bad = cli_main("diagnose", fixture_spec("builder_with_args"), "--arg", "nope=1", "--quiet")
    assert bad.returncode == 2 and "takes no parameter nope" in bad.stderr


@pytest.mark.slow
def test_demo_runs(tmp_path):
    out = tmp_path / "demo.json"
    result = pipediag("diagnose", "--demo", "--quiet", "--max-seconds", "1", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # --quiet, for CI logs: the report on stdout and nothing else
    data = json.loads(out.read_text())
    assert data["verdict"]["bottleneck"] in ("input", "compute", "inconclusive", "host", "memory")
    assert data["step"]["kind"] == "standin"
    assert "stand-in model" in result.stdout
    # The process's own start-up (Python, TensorFlow's import), before the diagnosis: recorded, and
    # on the time line, since `elapsed_s` leaves it out
    assert data["startup_s"] > 0.5 and data["startup_s"] < 600, data["startup_s"]
    # The time line wraps where its phases end, which differs run to run: read it unwrapped.
    assert "before it, start-up" in " ".join(result.stdout.split()), result.stdout


def test_gpus_that_name_no_gpu_are_a_usage_error_before_anything_runs():
    result = pipediag("diagnose", "--demo", "--gpus", " , ")
    assert result.returncode == 2
    assert "--gpus names no GPU" in result.stderr and "HINT: give NVML indices or UUIDs" in result.stderr
    assert "--gpus" in pipediag("diagnose", "--help").stdout


def test_a_sys_exit_in_code_a_command_runs_is_the_users_and_exits_1(monkeypatch, capsys):
    """Where no call site named the part (builder, step, ...), the command line still does not let
    the user's exit code through as its own: 3 would read as compare --fail-if-slower failing."""
    from pipediag import cli
    from pipediag.commands import env

    class Exiting:
        register = staticmethod(env.register)

        @staticmethod
        def run(args, out, err):
            sys.exit(3)  # as the user's code would, deep inside a run

    monkeypatch.setitem(cli.COMMANDS, "env", Exiting)
    assert cli.main(["env"]) == 1
    said = " ".join(capsys.readouterr().err.split())
    assert "error: your code exited: sys.exit(3) at test_cli.py:" in said and "HINT:" in said
    assert "Traceback" not in said
    with pytest.raises(SystemExit) as version:  # argparse's own exits are not the user's
        cli.main(["--version"])
    assert version.value.code == 0


def test_only_the_commands_own_process_leaves_its_objects_to_the_operating_system(monkeypatch, capsys):
    """As the command (argv None) main freezes the collector's objects, so shutdown does not walk
    them again; called with arguments (a test, a caller's process) it leaves the collector alone."""
    import gc

    from pipediag import backends, cli
    from pipediag.modes import watchdog

    def exit_now(code):  # the command's os._exit would end this test process
        raise AssertionError(f"main would have ended the process ({code}): threads left {cli.threads_left()}")

    # The suite's earlier tests may leave threads; the command's own process would end without them.
    monkeypatch.setattr(cli, "_exit_now", exit_now)
    monkeypatch.setattr(cli, "threads_left", lambda: [])
    monkeypatch.setattr(watchdog, "stuck_threads", lambda: 0)
    monkeypatch.setattr(backends, "freeze_imported_objects", False)
    frozen_before = gc.get_freeze_count()
    try:
        assert cli.main([]) == cli.EXIT_USAGE and gc.get_freeze_count() == frozen_before
        assert not backends.freeze_imported_objects
        monkeypatch.setattr(sys, "argv", ["pipediag"])
        assert cli.main() == cli.EXIT_USAGE and gc.get_freeze_count() > frozen_before
        assert backends.freeze_imported_objects  # TensorFlow's objects too, once a command imports it
    finally:
        if not frozen_before:  # else conftest froze TensorFlow's objects: they stay so
            gc.unfreeze()
    assert "diagnose" in capsys.readouterr().out  # the help, both times


def test_threads_left_names_the_non_daemon_threads_by_what_they_run():
    import threading

    from pipediag.cli import threads_left

    stop = threading.Event()

    def upload_metrics():
        stop.wait()

    thread = threading.Thread(target=upload_metrics, name="tracker", daemon=False)
    daemon = threading.Thread(target=stop.wait, name="daemon-helper", daemon=True)
    thread.start()
    daemon.start()
    try:
        left = threads_left()
        assert "tracker: test_threads_left_names_the_non_daemon_threads_by_what_they_run.<locals>.upload_metrics" in left
        assert not any("daemon-helper" in name or "MainThread" in name for name in left)
    finally:
        stop.set()
        thread.join()
        daemon.join()


LEFT_RUNNING = '''
import sys, threading, time
from pipediag.cli import main
threading.Thread(target=lambda: time.sleep(100_000), name="logger", daemon=False).start()
sys.argv = ["pipediag", *sys.argv[1:]]
sys.exit(main())
'''


def test_the_command_ends_after_its_report_although_a_thread_is_left_running(tmp_path):
    """A normal exit would join the thread for ever; the command names it and ends (os._exit after
    the files and the report are flushed). No TensorFlow: `report` of a saved diagnosis."""
    from pipediag.records.files import write_json
    from tests.summaries import diagnosis

    saved, page = tmp_path / "run.json", tmp_path / "run.html"
    write_json(diagnosis().to_dict(), str(saved))
    result = subprocess.run([sys.executable, "-c", LEFT_RUNNING, "report", str(saved), "--html", str(page)],
                            capture_output=True, text=True, timeout=120, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT, COLUMNS="200"))
    assert result.returncode == 0, result.stderr
    assert "Modes" in result.stdout and "<svg" in page.read_text()
    assert "note: your code left 1 thread(s) running (logger: <lambda>); pipediag ends without waiting" in result.stderr
