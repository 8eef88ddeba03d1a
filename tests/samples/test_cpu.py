import threading
import time

import psutil

from pipediag.samples.cpu import CpuReader


def test_busy_thread_shows_up_in_process_and_core_readings():
    reader = CpuReader()
    reader.prime()
    stop = time.monotonic() + 0.5
    done = threading.Event()

    def spin():
        while time.monotonic() < stop:
            pass
        done.set()

    threading.Thread(target=spin).start()
    done.wait()
    reading = reader.read()
    assert reading.process_pct > 50  # about one core spinning
    assert max(reading.per_core_pct) > 40
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
