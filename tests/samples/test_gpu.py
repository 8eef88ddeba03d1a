"""The GPU reader and sampler against the scripted NVML that ships in the package."""

from pipediag.backends import nvml
from pipediag.backends.fake_nvml import FakeGpu, FakeNvml
from pipediag.records.readings import SampleLog
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
    from pipediag.records.readings import SampleLog

    assert SampleLog.from_dict(log.to_dict()) == log


# -- the GPU side in depth: driver samples, clocks, PCIe, process memory, GPM -----------------

def fake_gpu(**kw):
    clock = Clock()
    fake = FakeNvml([FakeGpu(**kw)], clock_s=clock)
    return fake, GpuReader(fake, clock_s=clock).open(), clock


def test_driver_samples_arrive_once_each_and_only_newer_than_the_start():
    # The driver samples every 1/6 s; samples taken before pipediag opened NVML are skipped.
    fake, reader, clock = fake_gpu(util_pct=lambda t: 10 * round(6 * t), util_sample_period_s=1 / 6)
    clock.s = 0.5
    first = reader.read()[0].util_samples_pct
    clock.s = 1.0
    second = reader.read()[0].util_samples_pct
    assert first == (10.0, 20.0, 30.0)  # samples 1..3 (t = 1/6, 2/6, 3/6)
    assert second == (40.0, 50.0, 60.0)  # samples 4..6, none repeated
    assert reader.read()[0].util_samples_pct == ()  # nothing new: empty, not None
    assert reader.metrics["util_samples_pct"].startswith("nvmlDeviceGetSamples")


def test_no_driver_sample_buffer_is_none_with_a_reason_and_not_asked_again():
    fake, reader, clock = fake_gpu(util_samples=False)
    clock.s = 1.0
    assert reader.read()[0].util_samples_pct is None
    assert "Not Supported" in reader.metric_reasons["util_samples_pct"]
    calls = fake.calls["nvmlDeviceGetSamples"]
    reader.read()
    assert fake.calls["nvmlDeviceGetSamples"] == calls  # NVML said never: pipediag stopped asking


def test_driver_samples_that_are_not_percentages_are_refused():
    fake, reader, clock = fake_gpu(util_samples_pct=[5000])
    clock.s = 0.5
    assert reader.read()[0].util_samples_pct is None
    assert "outside 0-100" in reader.metric_reasons["util_samples_pct"]


def test_clocks_power_and_pcie_units():
    fake, reader, clock = fake_gpu(gpm_supported=False, mem_clock_mhz=2619, pcie_tx_kb_per_s=250, pcie_rx_kb_per_s=4000)
    reading = reader.read()[0]
    assert reading.mem_clock_mhz == 2619.0
    assert reading.pcie_tx_bytes_per_s == 250_000.0  # NVML's KB/s
    assert reading.pcie_rx_bytes_per_s == 4_000_000.0
    assert reader.metrics["pcie_tx_bytes_per_s"] == "nvmlDeviceGetPcieThroughput"


def test_this_process_memory_is_found_by_pid():
    fake, reader, clock = fake_gpu(process_memory_bytes=3 * 2**30, other_processes=((1, 5 * 2**30),))
    assert reader.read()[0].process_memory_bytes == 3 * 2**30


def test_process_memory_of_a_pid_nvml_does_not_list_is_unknown_not_zero():
    # In a container NVML reports host pids: this process is not found, and pipediag says so.
    fake, reader, clock = fake_gpu(process_pid=999_999_999, process_memory_bytes=2**30)
    assert reader.read()[0].process_memory_bytes is None
    assert "is not in NVML's compute process list (pids: 999999999)" in reader.metric_reasons["process_memory_bytes"]


def test_gpm_metrics_cover_the_time_since_the_previous_gpm_sample():
    fake, reader, clock = fake_gpu(gpm_sm_active_pct=lambda t: 10 * t, gpm_sm_occupancy_pct=40, gpm_tensor_active_pct=55,
                                   gpm_dram_bw_pct=[20, 70], gpm_fp32_active_pct=3, gpm_fp16_active_pct=None,
                                   gpm_pcie_tx_mib_per_s=2, gpm_pcie_rx_mib_per_s=8)
    clock.s = 0.5
    r = reader.read()[0]
    assert (r.gpm_sm_active_pct, r.gpm_sm_occupancy_pct, r.gpm_tensor_active_pct) == (5.0, 40.0, 55.0)
    assert r.gpm_dram_bw_pct == 20.0 and r.gpm_fp32_active_pct == 3.0
    assert r.gpm_fp16_active_pct is None and "NVML error 3" in reader.metric_reasons["gpm_fp16_active_pct"]
    assert (r.pcie_tx_bytes_per_s, r.pcie_rx_bytes_per_s) == (2 * 2**20, 8 * 2**20)  # from GPM, MiB/s
    assert reader.metrics["pcie_tx_bytes_per_s"].startswith("GPM")
    assert "nvmlDeviceGetPcieThroughput" not in fake.calls  # GPM has PCIe: no 20 ms counter reads
    clock.s = 1.0
    assert reader.read()[0].gpm_dram_bw_pct == 70.0


def test_gpm_samples_closer_than_100_ms_are_skipped_not_guessed():
    fake, reader, clock = fake_gpu(gpm_sm_active_pct=50)
    clock.s = 0.05
    assert reader.read()[0].gpm_sm_active_pct is None
    assert "gpm_sm_active_pct" not in reader.metric_reasons  # not a failure: just too soon
    clock.s = 0.2
    assert reader.read()[0].gpm_sm_active_pct == 50.0
    assert fake.calls["nvmlGpmMetricsGet"] == 1


def test_gpu_without_gpm_gives_none_with_a_reason_and_old_pcie():
    fake, reader, clock = fake_gpu(gpm_supported=False)
    clock.s = 0.5
    r = reader.read()[0]
    assert r.gpm_sm_active_pct is None and r.gpm_dram_bw_pct is None
    assert "GPM is not supported on this GPU" in reader.metric_reasons["gpm_sm_active_pct"]
    assert r.pcie_tx_bytes_per_s == 1_000_000.0
    assert not reader.gpm_available
    assert fake.gpm_allocated == 0


def test_driver_without_gpm_calls_says_so():
    fake, reader, clock = fake_gpu(gpm_supported=None)
    assert "GPM: nvmlGpmQueryDeviceSupport: Not Supported" in reader.metric_reasons["gpm_sm_active_pct"]


def test_gpm_buffers_are_freed_on_close():
    fake, reader, clock = fake_gpu()
    clock.s = 0.5
    reader.read()
    reader.close()
    assert fake.gpm_allocated == 2 and fake.gpm_freed == 2


def test_sample_log_says_which_metrics_the_run_had():
    from pipediag.analysis.gpu import metrics_seen

    clock = Clock()
    fake = FakeNvml([FakeGpu(gpm_supported=False, power_w=None)], clock_s=clock)
    ticks = iter(range(0, 10**12, 100_000_000))
    sampler = Sampler(gpu_reader=GpuReader(fake, clock_s=clock), clock_ns=lambda: next(ticks))
    sampler.gpu_reader.open()
    sampler.cpu_reader.prime()
    clock.s = 0.5
    sampler.sample_once()
    log = sampler.stop()
    seen = metrics_seen(log)
    assert list(seen.available)[:2] == ["util_pct", "util_samples_pct"]
    assert "power_w" not in seen.available and "Not Supported" in seen.unavailable["power_w"]
    assert "GPM is not supported" in seen.unavailable["gpm_sm_active_pct"]
    assert not seen.gpm
    assert SampleLog.from_dict(log.to_dict()) == log


def test_real_pynvml_has_every_function_and_constant_the_reader_uses():
    """The fake mirrors pynvml: the names the reader calls must exist in the real binding."""
    import pynvml

    from pipediag.samples.gpm import GPM_METRICS

    for name in ("nvmlDeviceGetUtilizationRates", "nvmlDeviceGetSamples", "nvmlDeviceGetPcieThroughput",
                 "nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetClockInfo", "nvmlGpmQueryDeviceSupport",
                 "nvmlGpmSampleAlloc", "nvmlGpmSampleGet", "nvmlGpmSampleFree", "nvmlGpmMetricsGet",
                 "c_nvmlGpmMetricsGet_t", "NVML_GPM_METRICS_GET_VERSION", "NVML_GPU_UTILIZATION_SAMPLES",
                 "NVMLError_NotFound", "NVMLError_NotSupported"):
        assert hasattr(pynvml, name), name
    for constant, value in GPM_METRICS.values():
        assert getattr(pynvml, constant) == value
    request = pynvml.c_nvmlGpmMetricsGet_t()  # the struct the reader fills, field by field
    request.version, request.numMetrics = pynvml.NVML_GPM_METRICS_GET_VERSION, len(GPM_METRICS)
    for slot, (_, metric_id) in enumerate(GPM_METRICS.values()):
        request.metrics[slot].metricId = metric_id
    assert [request.metrics[i].metricId for i in range(len(GPM_METRICS))] == [v for _, v in GPM_METRICS.values()]


def test_reader_reads_only_the_chosen_gpus_with_their_uuids():
    from pipediag.samples.selection import GpuSelection

    fake = FakeNvml([FakeGpu(util_pct=10 * k) for k in range(4)])
    reader = GpuReader(fake, gpus=GpuSelection.choose(None, environ={"CUDA_VISIBLE_DEVICES": "3,1"})).open()
    assert [d.index for d in reader.devices] == [3, 1]
    assert reader.devices[0].uuid == "GPU-fake0000-0000-0000-0000-000000000003"
    assert [(r.index, r.util_pct) for r in reader.read()] == [(3, 30.0), (1, 10.0)]
    assert reader.selection_text == "GPUs 3, 1 (CUDA_VISIBLE_DEVICES)"
    reader.close()


def test_no_gpu_chosen_is_no_gpu_data_with_the_reason():
    from pipediag.samples.selection import GpuSelection

    fake = FakeNvml([FakeGpu(), FakeGpu()])
    reader = GpuReader(fake, gpus=GpuSelection.choose(None, environ={"CUDA_VISIBLE_DEVICES": ""})).open()
    assert not reader.available and reader.read() == ()
    assert reader.unavailable_reason.startswith("CUDA_VISIBLE_DEVICES names no GPU")
    assert fake.shutdown_count == 1


def test_what_cuda_visible_devices_names_and_nvml_lacks_is_said_in_the_selection_line():
    from pipediag.samples.selection import GpuSelection

    reader = GpuReader(FakeNvml([FakeGpu(), FakeGpu()]),
                       gpus=GpuSelection.choose(None, environ={"CUDA_VISIBLE_DEVICES": "1,5"})).open()
    assert [d.index for d in reader.devices] == [1]
    assert reader.selection_text.startswith("GPU 1 (CUDA_VISIBLE_DEVICES); CUDA_VISIBLE_DEVICES names 5, which matches")
    reader.close()
