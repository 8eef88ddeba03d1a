"""The background sampler: a thread that reads CPU and GPU at a fixed rate into a bounded buffer.

Modes record their own time windows on the same clock; analysis later picks the samples inside
each window (`SampleLog.between`). Readers and the clock are injected, so tests drive it with a
scripted NVML and need no real GPU.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

from pipediag.records.container import ContainerLimits
from pipediag.records.readings import Sample, SampleLog
from pipediag.samples.container import read_limits, read_throttle
from pipediag.samples.cpu import CpuReader
from pipediag.samples.gpu import GpuReader

DEFAULT_HZ = 10.0
DEFAULT_MAX_SAMPLES = 36_000  # one hour at 10 Hz, a few MB


class Sampler:
    """Use as a context manager, or call start() and stop(). `log()` may be called at any time."""

    def __init__(
        self,
        *,
        cpu_reader: CpuReader | None = None,
        gpu_reader: GpuReader | None = None,
        hz: float = DEFAULT_HZ,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        clock_ns: Callable[[], int] = time.monotonic_ns,
        container: ContainerLimits | None = None,
    ):
        """`container`: this process's limits (default: read now); with a CPU quota, every sample
        also reads the quota's throttling counters, so any window (a mode) has their delta."""
        if hz <= 0:
            raise ValueError("sampling rate must be positive")
        self.cpu_reader = cpu_reader or CpuReader()
        self.gpu_reader = gpu_reader if gpu_reader is not None else GpuReader()
        self.interval_s = 1.0 / hz
        self.clock_ns = clock_ns
        self.container = container if container is not None else read_limits()
        self._samples: collections.deque[Sample] = collections.deque(maxlen=max_samples)
        self._taken = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None  # a reader that failed stops sampling, not the run

    def start(self) -> Sampler:
        if self._thread is not None:
            return self
        self.gpu_reader.open()
        self.cpu_reader.prime()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="pipediag-sampler", daemon=True)
        self._thread.start()
        return self

    def sample_once(self) -> Sample:
        """Take one sample now (the thread calls this; tests may too)."""
        sample = Sample(time_ns=self.clock_ns(), cpu=self.cpu_reader.read(), gpus=self.gpu_reader.read(),
                        throttle=read_throttle(self.container.cpu_stat_path))
        with self._lock:
            self._samples.append(sample)
            self._taken += 1
        return sample

    def _run(self) -> None:
        # Deadlines, not fixed sleeps: reading takes time, and the rate should not drift with it.
        next_s = time.monotonic() + self.interval_s
        while not self._stop.wait(max(0.0, next_s - time.monotonic())):
            try:
                self.sample_once()
            except Exception as error:  # noqa: BLE001 - keep the diagnosis alive; report it
                self.error = error
                return
            next_s = max(next_s + self.interval_s, time.monotonic() + self.interval_s / 2)

    def stop(self) -> SampleLog:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._thread = None
        self.gpu_reader.close()
        return self.log()

    def log(self) -> SampleLog:
        with self._lock:
            samples = tuple(self._samples)
            dropped = self._taken - len(samples)
        return SampleLog(
            interval_s=self.interval_s,
            samples=samples,
            gpu_devices=self.gpu_reader.devices,
            gpu_unavailable_reason=self.gpu_reader.unavailable_reason,
            gpu_metric_reasons=dict(self.gpu_reader.metric_reasons),
            dropped_samples=dropped,
            gpu_metrics=dict(self.gpu_reader.metrics),
            gpu_selection=self.gpu_reader.selection_text,
            gpu_selected_by=self.gpu_reader.selected_by if self.gpu_reader.selection_text else None,
            container=self.container,
        )

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
