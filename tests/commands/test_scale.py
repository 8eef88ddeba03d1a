"""`pipediag scale` as users run it: options, the command diagnose quotes, and Ctrl-C / SIGTERM
with real server processes (stopped, nothing left, partial report written)."""

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from pipediag.cli import build_parser
from pipediag.commands.common import scale_command
from pipediag.service.cluster import alive, listening

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pipediag(*args, timeout=120):
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="110")
    return subprocess.run([sys.executable, "-m", "pipediag", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


def test_help_lists_the_service_and_plan_options():
    result = pipediag("scale", "--help")
    assert result.returncode == 0
    for option in ("--workers", "--worker-cores", "--service", "--remote-workers", "--processing-mode",
                   "--accelerators", "--compute-rate", "--json"):
        assert option in result.stdout


@pytest.mark.parametrize("args", [["--workers", "1,x"], ["--workers", "0"], ["--processing-mode", "off"]])
def test_bad_option_values_exit_2(args):
    result = pipediag("scale", "t.py:f", *args)
    assert result.returncode == 2 and "HINT:" in result.stderr


def test_scale_command_repeats_the_users_target_and_step_options():
    args = build_parser().parse_args(["diagnose", "my data.py:make", "--model", "train.py:model", "--batch-size", "64",
                                      "--arg", "data_dir=/d"])
    assert scale_command(args) == ("pipediag scale 'my data.py:make' --model train.py:model --batch-size 64 "
                                   "--arg data_dir=/d --workers 1,2,4 --accelerators 1,8")
    demo = build_parser().parse_args(["diagnose", "--demo"])
    assert scale_command(demo).startswith("pipediag scale --demo --workers")
    tfds = build_parser().parse_args(["diagnose", "tfds:my_set", "--data-dir", "/data", "--split", "test"])
    assert scale_command(tfds).startswith("pipediag scale tfds:my_set --data-dir /data --split test --workers")
    parsed = build_parser().parse_args(scale_command(tfds).split()[1:])
    assert (parsed.target, parsed.data_dir, parsed.split) == ("tfds:my_set", "/data", "test")


def test_data_dir_without_a_tfds_target_is_a_usage_error():
    result = pipediag("scale", "t.py:f", "--data-dir", "/d")
    assert result.returncode == 2 and "tfds:NAME" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_stops_every_server_and_writes_the_partial_report(fixture_spec, tmp_path, sig):
    out, page = tmp_path / "scale.json", tmp_path / "scale.html"
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="110")
    # --max-seconds 5, not 30: the local modes before the servers start (a settling warm-up, then
    # local input alone, which ran to its 100,000-step cap, ~10 s) end sooner; after the servers
    # listen, the service modes still need 2 s each at least, far past the signal 1 s later.
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipediag", "scale", fixture_spec("in_memory"), "--step", fixture_spec("light_step"),
         "--workers", "1", "--max-seconds", "5", "--json", str(out), "--html", str(page)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )
    servers: list[psutil.Process] = []
    deadline = time.monotonic() + 90
    try:
        while len(servers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            servers = [c for c in psutil.Process(proc.pid).children()
                       if "pipediag.service.server" in " ".join(c.cmdline())]
            time.sleep(0.2)
        assert len(servers) == 2, "the dispatcher and the worker did not start"
        ports: set[int] = set()
        while len(ports) < 2 and time.monotonic() < deadline:
            ports = {c.laddr.port for s in servers for c in s.net_connections(kind="tcp") if c.status == "LISTEN"}
            time.sleep(0.2)
        time.sleep(1.0)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130), stderr  # 128 + the signal
    assert "INTERRUPTED: partial report" in stdout
    assert not any(alive(s.pid) for s in servers)
    assert listening(ports)[0] == ()
    data = json.loads(out.read_text())
    assert data["kind"] == "scale" and data["status"] == "interrupted"
    assert data["service"]["shutdown"]["clean"] is True
    assert "INTERRUPTED: partial report" in page.read_text(encoding="utf-8")  # the page is written too
    again = pipediag("report", str(out))
    assert again.returncode == 0 and "pipediag scale" in again.stdout and "INTERRUPTED" in again.stdout


def test_quoting_the_scale_command_writes_what_the_fix_catalog_would_have_written():
    """The library's fixes carry the catalog's example command; the CLI writes the user's own in
    its place, the same text the catalog writes when given the command."""
    from dataclasses import dataclass

    from pipediag.commands.common import quote_scale_command
    from pipediag.fixes.recommend import _fix

    command = "pipediag scale 'my data.py:make' --workers 1,2,4 --accelerators 1,8"
    plain = (_fix("tf_data_service", None, "basis"), _fix("cpu_quota", None, "basis", cores_needed=6, quota_cores=2.0),
             _fix("xla", None, "basis"))
    @dataclass(frozen=True)
    class Result:  # the part of a Diagnosis quote_scale_command reads
        fixes: tuple

    quoted = quote_scale_command(Result(plain), command)
    assert quoted.fixes[0] == _fix("tf_data_service", None, "basis", command=command)
    assert quoted.fixes[1] == _fix("cpu_quota", None, "basis", cores_needed=6, quota_cores=2.0, command=command)
    assert quoted.fixes[2] is plain[2]
    unchanged = Result((plain[2],))
    assert quote_scale_command(unchanged, command) is unchanged
