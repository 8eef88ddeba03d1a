"""The GPU over a mode's window, and the peak memory's source, on plain readings."""

from pipediag.analysis.gpu import UTIL_FROM_DRIVER_SAMPLES, UTIL_FROM_RATES, gpu_window, peak_memory
from pipediag.records.memory import FrameworkMemory
from pipediag.records.readings import CpuReading, GpuReading, Sample, SampleLog

CPU = CpuReading(10.0, (10.0, 10.0), 20.0, 0.0, 2**30, 8 * 2**30, 16 * 2**30)


def reading(util=None, samples=None, **kw):
    values = dict(index=0, util_pct=util, memory_used_bytes=2**30, memory_total_bytes=2**34, power_w=300.0,
                  sm_clock_mhz=1980.0)
    values.update(kw)
    return GpuReading(util_samples_pct=samples, **values)


def log_of(*gpus, **kw):
    return SampleLog(interval_s=0.1, samples=tuple(Sample(i, CPU, (g,)) for i, g in enumerate(gpus)), **kw)


def test_driver_samples_are_preferred_and_each_counts_once():
    log = log_of(reading(util=100, samples=(10.0, 20.0)), reading(util=100, samples=()), reading(util=100, samples=(60.0,)))
    w = gpu_window(log.samples, log)
    assert w.util_source == UTIL_FROM_DRIVER_SAMPLES and w.util_readings == 3
    assert w.util_pct == 30.0  # (10 + 20 + 60) / 3, not the rates' 100


def test_rates_when_the_driver_keeps_no_samples():
    log = log_of(reading(util=40), reading(util=60))
    w = gpu_window(log.samples, log)
    assert (w.util_source, w.util_pct, w.util_readings) == (UTIL_FROM_RATES, 50.0, 2)


def test_gpm_means_and_the_busiest_pipe():
    log = log_of(reading(util=90, gpm_sm_active_pct=80.0, gpm_tensor_active_pct=50.0, gpm_fp32_active_pct=70.0),
                 reading(util=90),  # a tick without a GPM sample (too soon): left out, not counted as 0
                 reading(util=90, gpm_sm_active_pct=60.0, gpm_tensor_active_pct=30.0, gpm_fp32_active_pct=10.0))
    w = gpu_window(log.samples, log)
    assert w.gpm.samples == 2 and w.gpm.sm_active_pct == 70.0
    assert w.gpm.math_active_pct == 40.0  # max(tensor 40, fp32 40, fp16 unknown)
    assert w.gpm.dram_bw_pct is None


def test_no_gpm_reading_keeps_the_reason():
    log = log_of(reading(util=90), gpu_metric_reasons={"gpm_sm_active_pct": "GPM is not supported on this GPU"})
    w = gpu_window(log.samples, log)
    assert w.gpm is None and w.gpm_reason == "GPM is not supported on this GPU"


def test_no_gpu_data_is_no_window():
    log = SampleLog(interval_s=0.1, samples=(Sample(0, CPU, ()),), gpu_unavailable_reason="NVML could not start")
    assert gpu_window(log.samples, log) is None


def test_peak_memory_prefers_the_framework_then_nvml_process_memory():
    log = log_of(reading(util=50, process_memory_bytes=3 * 2**30), reading(util=50, process_memory_bytes=5 * 2**30))
    w = gpu_window(log.samples, log)
    jax = FrameworkMemory("jax", "Device.memory_stats()", "cuda:0", 7 * 2**30, 2**30, 100 * 2**30, "mode")
    peak, reason = peak_memory(jax, w, log)
    assert (peak.bytes, peak.source, peak.scope, peak.limit_bytes) == (7 * 2**30, "jax Device.memory_stats()", "mode",
                                                                        100 * 2**30)
    peak, reason = peak_memory(None, w, log)
    assert (peak.bytes, peak.source, peak.scope) == (5 * 2**30, "NVML: this process", "sampled") and reason is None


def test_no_peak_memory_says_why():
    log = log_of(reading(util=50), gpu_metric_reasons={"process_memory_bytes": "not in NVML's list"})
    peak, reason = peak_memory(None, gpu_window(log.samples, log), log)
    assert peak is None and "not in NVML's list" in reason
    no_gpu = SampleLog(interval_s=0.1, samples=(), gpu_unavailable_reason="NVML could not start")
    assert "no NVML (NVML could not start)" in peak_memory(None, None, no_gpu)[1]


def test_with_nothing_chosen_the_job_is_the_gpus_nvml_lists_this_process_on():
    from pipediag.analysis.gpu import gpu_windows, job_gpus
    from pipediag.records.readings import GpuDevice
    from pipediag.samples.selection import SOURCE_ALL, SOURCE_CUDA

    def tick(t):  # GPUs 0 and 1 hold this process; 2 and 3 are another job's, busy
        return Sample(t, CPU, tuple(reading(util=90.0, index=k, process_memory_bytes=2**30 if k < 2 else None)
                                    for k in range(4)))

    devices = tuple(GpuDevice(k, "H200", 2**34, f"GPU-{k}") for k in range(4))
    log = SampleLog(interval_s=0.1, samples=tuple(tick(t) for t in range(5)), gpu_devices=devices,
                    gpu_selection="GPUs 0, 1, 2, 3 (every GPU NVML lists)", gpu_selected_by=SOURCE_ALL)
    kept, line = job_gpus(log)
    assert kept == (0, 1)
    assert line == "GPUs 0, 1 (those NVML lists this process on, of the 4 it lists; no --gpus or CUDA_VISIBLE_DEVICES chose)"
    assert [w.index for w in gpu_windows(log.samples, log)] == [0, 1]
    # chosen by CUDA_VISIBLE_DEVICES: every chosen GPU is the job's, used or not (an idle one is told)
    chosen = SampleLog(interval_s=0.1, samples=log.samples, gpu_devices=devices, gpu_selected_by=SOURCE_CUDA)
    assert job_gpus(chosen)[0] == (0, 1, 2, 3)
    # NVML never lists this process (a container's pids): every GPU stays
    hidden = tuple(Sample(t, CPU, tuple(reading(util=90.0, index=k) for k in range(4))) for t in range(5))
    assert job_gpus(SampleLog(interval_s=0.1, samples=hidden, gpu_devices=devices, gpu_selected_by=SOURCE_ALL))[0] \
        == (0, 1, 2, 3)
