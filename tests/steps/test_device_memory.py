"""Peak device memory per mode: which framework is asked, and what a reading means."""

import pytest

from pipediag.records.memory import FrameworkMemory
from pipediag.steps.device_memory import SCOPE_MODE, SCOPE_PROCESS, DeviceMemory, JaxProbe


class Device:
    """Stands in for a jax.Device: only memory_stats(), which is what JaxProbe reads."""

    def __init__(self, peaks):
        self.peaks = list(peaks)

    def memory_stats(self):
        peak = self.peaks.pop(0) if len(self.peaks) > 1 else self.peaks[0]
        return {"peak_bytes_in_use": peak, "bytes_in_use": 10, "bytes_limit": 1000}

    def __str__(self):
        return "cuda:0"


def test_jax_peak_is_the_modes_own_only_when_it_rose_during_the_mode():
    rose = JaxProbe(Device([100, 400]))
    rose.reset()
    assert rose.read().scope == SCOPE_MODE and rose.read().peak_bytes == 400
    flat = JaxProbe(Device([400, 400]))
    flat.reset()
    reading = flat.read()
    assert reading.scope == SCOPE_PROCESS and reading.limit_bytes == 1000  # an upper bound on this mode's peak


class Probe:
    def __init__(self, framework, peak):
        self.framework, self.peak, self.resets = framework, peak, 0

    def reset(self):
        self.resets += 1

    def read(self):
        return FrameworkMemory(self.framework, "api", "dev", self.peak, 0, None, SCOPE_MODE)


def test_the_steps_own_framework_is_read_first():
    jax, torch = Probe("jax", 1), Probe("torch", 2)
    memory = DeviceMemory(framework=lambda: "torch", probes=lambda: [jax, torch])
    memory.start()
    assert memory.stop().framework == "torch"
    assert jax.resets == torch.resets == 1


def test_a_framework_that_started_during_the_mode_reports_its_process_peak():
    late = Probe("torch", 5)
    found = iter([[], [late]])
    memory = DeviceMemory(probes=lambda: next(found))
    memory.start()
    reading = memory.stop()
    assert reading.framework == "torch" and reading.scope == SCOPE_PROCESS and late.resets == 0


def test_no_accelerator_no_reading():
    memory = DeviceMemory(probes=lambda: [])
    memory.start()
    assert memory.stop() is None


def test_jax_on_the_cpu_is_not_asked():
    jax = pytest.importorskip("jax")
    from pipediag.steps.device_memory import available_probes

    jax.numpy.ones(1).block_until_ready()
    assert all(p.framework != "jax" for p in available_probes())  # the CPU device keeps no stats
    assert jax.devices()[0].memory_stats() is None


def test_round_trip():
    reading = FrameworkMemory("jax", "Device.memory_stats()", "cuda:0", 5, 4, 10, SCOPE_MODE)
    assert FrameworkMemory.from_dict(reading.to_dict()) == reading
