"""tests/alone.py: under pytest-xdist, a test marked `alone` runs with no other test beside it."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFTEST = """
import glob, os, time

from tests import alone
from tests.alone import pytest_runtest_protocol, pytest_unconfigure


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: no other test beside it")
    alone.configure(config)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is not None:  # both workers start testing together (else one may finish before the other starts)
        folder = os.path.dirname(os.environ["ALONE_LOG"])
        open(os.path.join(folder, "ready-" + worker), "w").close()
        deadline = time.monotonic() + 60
        while len(glob.glob(os.path.join(folder, "ready-*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
"""

TESTS = """
import json, os, time

import pytest


def record(name):
    start = time.monotonic()
    time.sleep(0.3)
    with open(os.environ["ALONE_LOG"], "a") as f:
        f.write(json.dumps([name, os.environ.get("PYTEST_XDIST_WORKER"), start, time.monotonic()]) + "\\n")


@pytest.mark.alone
@pytest.mark.parametrize("i", range(3))
def test_alone(i):
    record(f"alone {i}")


@pytest.mark.parametrize("i", range(8))
def test_shared(i):
    record(f"shared {i}")
"""


def run_two_workers(tmp_path, lock: bool):
    (tmp_path / "conftest.py").write_text(CONFTEST if lock else CONFTEST.replace("alone.configure(config)", "pass"))
    (tmp_path / "test_timed.py").write_text(TESTS)
    log = tmp_path / "log.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PIPEDIAG_TESTS_"))}
    env.update(ALONE_LOG=str(log), PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           str(tmp_path / "test_timed.py")], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in log.read_text().splitlines()]


def overlapping(runs, name):
    """The runs whose time overlaps the named run's."""
    _, _, start, end = next(r for r in runs if r[0] == name)
    return [r[0] for r in runs if r[0] != name and r[2] < end and start < r[3]]


@pytest.mark.slow
def test_an_alone_test_has_no_test_beside_it_and_the_others_run_two_at_once(tmp_path):
    pytest.importorskip("xdist")
    runs = run_two_workers(tmp_path, lock=True)
    assert len(runs) == 11 and {r[1] for r in runs} == {"gw0", "gw1"}
    for i in range(3):
        assert overlapping(runs, f"alone {i}") == []
    # the lock serialises only the alone tests: the others still ran beside each other
    assert any(overlapping(runs, f"shared {i}") for i in range(8))


@pytest.mark.slow
def test_without_the_lock_file_the_same_tests_overlap(tmp_path):
    """The check above can fail: with no lock file made, two workers run an alone test beside another."""
    pytest.importorskip("xdist")
    runs = run_two_workers(tmp_path, lock=False)
    assert any(overlapping(runs, f"alone {i}") for i in range(3))
