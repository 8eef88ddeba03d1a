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


def test_users_own_cpu_percent_calls_do_not_disturb_readings():
    reader = CpuReader()
    reader.prime()
    psutil.cpu_percent(percpu=True)  # resets psutil's module state, not ours
    time.sleep(0.05)
    reading = reader.read()
    assert all(0.0 <= v <= 100.0 for v in reading.per_core_pct)
