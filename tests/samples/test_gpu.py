"""The GPU reader and sampler against the scripted NVML that ships in the package."""

from pipediag.backends import nvml
from pipediag.backends.fake_nvml import FakeGpu, FakeNvml
from pipediag.samples.gpu import GpuReader
from pipediag.samples.sampler import Sampler


class Clock:
    def __init__(self):
        self.s = 0.0

    def __call__(self):
        return self.s


def test_reader_reads_every_metric_with_units():
    fake = FakeNvml([FakeGpu(util_pct=[10, 90], memory_used_bytes=2**30, power_w=312.5, sm_clock_mhz=1755)])
    reader = GpuReader(fake).open()
    assert reader.available and reader.unavailable_reason is None
    assert reader.devices[0].name == "NVIDIA H200 (fake)"
    first, second = reader.read()[0], reader.read()[0]
    assert (first.util_pct, second.util_pct) == (10.0, 90.0)
    assert first.memory_used_bytes == 2**30
    assert first.memory_total_bytes == 143_771_090_944
    assert first.power_w == 312.5  # NVML's milliwatts converted
    assert first.sm_clock_mhz == 1755.0
    reader.close()
    assert fake.shutdown_count == 1


def test_unsupported_metric_is_none_with_a_reason_never_zero():
    reader = GpuReader(FakeNvml([FakeGpu(power_w=None)])).open()
    reading = reader.read()[0]
    assert reading.power_w is None
    assert "Not Supported" in reader.metric_reasons["power_w"]
    assert reading.util_pct == 0.0  # a real reading of an idle GPU stays 0


def test_no_driver_means_no_readings_and_a_reason():
    reader = GpuReader(FakeNvml([FakeGpu()], library_missing=True)).open()
    assert not reader.available
    assert "NVML Shared Library Not Found" in reader.unavailable_reason
    assert reader.read() == ()


def test_no_gpu_means_a_reason():
    reader = GpuReader(FakeNvml([])).open()
    assert reader.unavailable_reason == "NVML found no NVIDIA GPU"


def test_query_never_raises_for_missing_functions():
    session = nvml.open_session(FakeNvml([FakeGpu()]))
    value = session.query("nvmlDeviceGetGpmMetrics", None)
    assert not nvml.is_available(value)
    assert not value  # NotAvailable is falsy, so it cannot pass for a reading


def test_scripts_can_follow_the_clock():
    clock = Clock()
    fake = FakeNvml([FakeGpu(util_pct=lambda t: 0 if t < 1 else 97)], clock_s=clock)
    reader = GpuReader(fake).open()
    assert reader.read()[0].util_pct == 0
    clock.s = 2.0
    assert reader.read()[0].util_pct == 97


def test_sampler_collects_cpu_and_scripted_gpu_in_a_bounded_buffer():
    fake = FakeNvml([FakeGpu(util_pct=[0, 50, 100])])
    ticks = iter(range(0, 10**12, 100_000_000))
    sampler = Sampler(gpu_reader=GpuReader(fake), hz=10, max_samples=2, clock_ns=lambda: next(ticks))
    sampler.gpu_reader.open()
    sampler.cpu_reader.prime()
    for _ in range(3):
        sampler.sample_once()
    log = sampler.stop()
    assert [s.gpus[0].util_pct for s in log.samples] == [50.0, 100.0]
    assert log.dropped_samples == 1
    assert log.gpu_devices[0].memory_total_bytes == 143_771_090_944
    assert all(0 <= c <= 100 for s in log.samples for c in s.cpu.per_core_pct)


def test_sampler_thread_runs_and_stops(tmp_path):
    import time

    with Sampler(gpu_reader=GpuReader(FakeNvml([])), hz=50) as sampler:
        time.sleep(0.3)
    log = sampler.log()
    assert len(log.samples) >= 5
    assert log.gpu_unavailable_reason == "NVML found no NVIDIA GPU"
    assert sampler.error is None


def test_sample_log_round_trips_through_dicts():
    fake = FakeNvml([FakeGpu(util_pct=42, power_w=None)])
    sampler = Sampler(gpu_reader=GpuReader(fake), hz=10)
    sampler.gpu_reader.open()
    sampler.cpu_reader.prime()
    sampler.sample_once()
    log = sampler.stop()
    from pipediag.samples.readings import SampleLog

    assert SampleLog.from_dict(log.to_dict()) == log
