"""CPU and host-memory readings from psutil.

Busy percentages come from differences of `psutil.cpu_times()` between two readings, kept in this
object rather than in psutil's module-level state, so a user's own `psutil.cpu_percent()` calls
cannot disturb them. The first reading has no previous one to difference against, so `prime()`
takes it and throws it away (psutil documents the same for `cpu_percent(interval=None)`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import psutil

from pipediag.records.readings import CpuReading

_IDLE_FIELDS = ("idle", "iowait")
# Linux counts guest time inside user time already; adding it again would count it twice.
_SKIP_FIELDS = ("guest", "guest_nice")


def _total(times) -> float:
    return sum(getattr(times, f) for f in times._fields if f not in _SKIP_FIELDS)


def _idle(times) -> float:
    return sum(getattr(times, f, 0.0) for f in _IDLE_FIELDS)


def _busy_pct(before, after) -> float:
    span = _total(after) - _total(before)
    if span <= 0:
        return 0.0
    busy = span - (_idle(after) - _idle(before))
    return max(0.0, min(100.0, 100.0 * busy / span))


class CpuReader:
    """Reads CPU load and memory. Call `prime()` once, then `read()` at each sample."""

    def __init__(self, process: psutil.Process | None = None, clock_s: Callable[[], float] = time.monotonic):
        self.process = process or psutil.Process()
        self.clock_s = clock_s
        self.has_iowait = hasattr(psutil.cpu_times(), "iowait")
        self._last_cores = None
        self._last_total = None
        self._last_process_s = 0.0
        self._last_s = 0.0

    def prime(self) -> None:
        self._last_cores = psutil.cpu_times(percpu=True)
        self._last_total = psutil.cpu_times()
        self._last_process_s = self._process_cpu_s()
        self._last_s = self.clock_s()

    def read(self) -> CpuReading:
        if self._last_cores is None:
            self.prime()
        cores = psutil.cpu_times(percpu=True)
        total = psutil.cpu_times()
        process_s = self._process_cpu_s()
        now_s = self.clock_s()

        per_core = tuple(_busy_pct(b, a) for b, a in zip(self._last_cores, cores))
        iowait_pct = None
        if self.has_iowait:
            span = _total(total) - _total(self._last_total)
            iowait_pct = 100.0 * (total.iowait - self._last_total.iowait) / span if span > 0 else 0.0
        wall_s = now_s - self._last_s
        process_pct = 100.0 * (process_s - self._last_process_s) / wall_s if wall_s > 0 else 0.0

        self._last_cores, self._last_total = cores, total
        self._last_process_s, self._last_s = process_s, now_s
        memory = psutil.virtual_memory()
        return CpuReading(
            total_pct=sum(per_core) / len(per_core) if per_core else 0.0,
            per_core_pct=per_core,
            process_pct=max(0.0, process_pct),
            iowait_pct=iowait_pct,
            rss_bytes=self.process.memory_info().rss,
            available_bytes=memory.available,
            total_bytes=memory.total,
        )

    def _process_cpu_s(self) -> float:
        t = self.process.cpu_times()
        return t.user + t.system


# Python's own start before pipediag's first import takes tens of milliseconds; more than this
# and the process ran something else before it became Python.
EXEC_GAP_S = 1.0


def process_age_s(now_s: Callable[[], float] = time.time, started_s: float | None = None,
                  imported_s: float | None = None) -> float:
    """Seconds since Python started in this process: from psutil's create time (to about 10 ms),
    unless pipediag was first imported more than EXEC_GAP_S after it (`imported_s`, default
    pipediag._imported). Then the process ran something else before it exec'd Python (`bash -c
    'pip install ... && pipediag diagnose ...'` runs its last command in the shell's own process,
    and a 25-s install read as start-up), and the age counts from pipediag's import, Python's own
    start (tens of milliseconds) left out; so it does where psutil cannot read the create time."""
    from pipediag import _imported

    imported = _imported.IMPORTED_S if imported_s is None else imported_s
    if started_s is None:
        try:
            started_s = psutil.Process().create_time()
        except (psutil.Error, OSError):
            started_s = imported
    if imported - started_s > EXEC_GAP_S:
        started_s = imported
    return max(0.0, now_s() - started_s)
