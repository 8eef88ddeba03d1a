import os
import shlex
import subprocess
import sys
import threading
import time

import psutil
import pytest

from pipediag.samples.cpu import CpuReader, process_age_s

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_busy_thread_shows_up_in_process_and_core_readings():
    """The CPU a spinning thread burns shows up in the process's and in the cores' readings. Checked
    against the thread's own CPU time (time.thread_time), not a fixed share of a core, so a machine
    busy with other work cannot fail it; 20 ms of slack per reading for the kernel's clock ticks."""
    reader = CpuReader()
    start_s = time.monotonic()
    reader.prime()
    stop = time.monotonic() + 0.5
    spent = {}

    def spin():
        t0 = time.thread_time()
        while time.monotonic() < stop:
            pass
        spent["cpu_s"] = time.thread_time() - t0

    thread = threading.Thread(target=spin)
    thread.start()
    thread.join()
    reading = reader.read()
    wall_s = time.monotonic() - start_s  # at least the reader's own interval
    assert reading.process_pct / 100 * wall_s >= spent["cpu_s"] - 0.02
    assert sum(reading.per_core_pct) / 100 * wall_s >= spent["cpu_s"] - 0.01 * len(reading.per_core_pct) - 0.02
    assert len(reading.per_core_pct) == psutil.cpu_count()
    assert reading.total_bytes >= reading.available_bytes > 0
    assert reading.rss_bytes > 0


def test_iowait_present_where_the_os_has_it():
    reading = CpuReader().read()
    assert (reading.iowait_pct is None) == (not hasattr(psutil.cpu_times(), "iowait"))


def test_users_own_cpu_percent_calls_do_not_disturb_readings(monkeypatch):
    """A reading differences against the reader's own previous times, not psutil's module state
    that the user's `psutil.cpu_percent()` resets. Scripted CPU times: prime at A, the user's call
    at B (after an idle stretch), the reading at C (after a busy stretch of the same length). From
    A the cores were busy half the time; from B, all of it."""
    cpu_times_type = type(psutil.cpu_times())
    phases = {"A": (0.0, 0.0), "B": (0.0, 10.0), "C": (10.0, 10.0)}  # (user s, idle s) per core
    phase = "A"

    def times(user_s, idle_s):
        return cpu_times_type._make(
            user_s if f == "user" else idle_s if f == "idle" else 0.0 for f in cpu_times_type._fields)

    def fake_cpu_times(percpu=False):
        user_s, idle_s = phases[phase]
        return [times(user_s, idle_s)] * 2 if percpu else times(2 * user_s, 2 * idle_s)

    reader = CpuReader()
    monkeypatch.setattr(psutil, "cpu_times", fake_cpu_times)
    reader.prime()
    phase = "B"
    psutil.cpu_percent(percpu=True)  # the user's own call: psutil keeps B as its last reading
    phase = "C"
    reading = reader.read()
    assert reading.per_core_pct == (50.0, 50.0)
    assert reading.total_pct == 50.0


def test_the_process_age_counts_from_the_process_start():
    started = psutil.Process().create_time()
    assert abs(process_age_s(now_s=lambda: started + 7.5, imported_s=started + 0.05) - 7.5) < 1e-6
    assert 0.0 < process_age_s() < time.time() - started + 1.0


def test_the_process_age_counts_from_pipediags_import_when_the_process_was_something_else_first():
    # Python started 0.05 s before pipediag's import: the process's age, Python's start included.
    assert process_age_s(now_s=lambda: 110.0, started_s=100.0, imported_s=100.05) == pytest.approx(10.0)
    # A shell ran 40 s of other commands, then exec'd Python in its own process: not start-up.
    assert process_age_s(now_s=lambda: 150.0, started_s=100.0, imported_s=140.0) == pytest.approx(10.0)


def test_an_exec_after_a_shells_own_work_is_not_counted_as_start_up():
    code = "from pipediag.samples.cpu import process_age_s; print(process_age_s())"
    shell = f"sleep 3; exec {shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 2.5  # pipediag's own import; from the process's start it read the 3-s sleep too
