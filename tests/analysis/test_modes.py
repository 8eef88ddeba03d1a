from pipediag.analysis.modes import rate_ratio, summarize
from pipediag.analysis.waiting import cpu_while_waiting, waiting_intervals
from pipediag.records.readings import CpuReading, GpuReading, Sample, SampleLog
from pipediag.records.run import ModeRun

MS = 1_000_000


def run(wait_ms, compute_ms, start_ms=0, name="pipeline"):
    n = len(wait_ms)
    return ModeRun(
        name=name, start_ns=start_ms * MS, end_ns=(start_ms + sum(wait_ms) + sum(compute_ms)) * MS,
        wait_ns=tuple(w * MS for w in wait_ms), compute_ns=tuple(c * MS for c in compute_ms),
        first_step_ns=None, warmup_steps=0, warmup_ns=0, stop_reason="stable",
    ) if n else None


def cpu(per_core, iowait=0.0):
    return CpuReading(total_pct=sum(per_core) / len(per_core), per_core_pct=tuple(per_core), process_pct=sum(per_core),
                      iowait_pct=iowait, rss_bytes=1, available_bytes=10, total_bytes=20)


def test_waiting_intervals_are_rebuilt_from_durations():
    r = run([10, 0, 30], [5, 5, 5], start_ms=100)
    assert waiting_intervals(r) == [(100 * MS, 110 * MS), (120 * MS, 150 * MS)]


def test_an_overlapped_steps_wait_is_the_end_of_its_fetch():
    from dataclasses import replace

    # Fetches of 12 and 3 ms; the device hid 8 ms of the first and all of the second.
    r = replace(run([4, 0], [9, 12], start_ms=100), fetch_ns=(12 * MS, 3 * MS), block_ns=(0, 5 * MS))
    assert waiting_intervals(r) == [(108 * MS, 112 * MS)]


def test_cpu_while_waiting_weights_samples_by_overlap():
    # Waits fill 0-100 ms; compute fills 100-200 ms. Sample at 100 covers 0-100 (waiting, one core busy),
    # sample at 200 covers 100-200 (computing, both cores busy).
    r = run([100], [100])
    samples = (Sample(100 * MS, cpu([100, 0])), Sample(200 * MS, cpu([100, 100])))
    w = cpu_while_waiting(r, samples, interval_ns=100 * MS)
    assert w.per_core_pct == (100.0, 0.0)
    assert w.busy_cores == 1.0 and w.purity == 1.0


def test_purity_is_low_when_waits_are_short_next_to_samples():
    r = run([5] * 10, [5] * 10)  # 100 ms of alternating 5 ms waits and 5 ms steps
    samples = (Sample(100 * MS, cpu([60, 60])),)
    w = cpu_while_waiting(r, samples, interval_ns=100 * MS)
    assert abs(w.purity - 0.5) < 1e-9


def test_summary_rates_percentiles_and_gpu_reason():
    r = run([2] * 50, [8] * 50)
    samples = tuple(Sample(t * MS, cpu([50, 50])) for t in range(100, 500, 100))
    log = SampleLog(interval_s=0.1, samples=samples, gpu_unavailable_reason="NVML found no NVIDIA GPU")
    s = summarize(r, log)
    assert s.steps == 50 and abs(s.batches_per_sec - 100.0) < 1e-9
    assert s.step_ms_median == 10.0 and s.input_wait_frac == 0.2
    assert s.cpu_util_pct == 50.0 and s.samples == 4
    assert s.gpu_util_pct is None and s.gpu_util_reason == "NVML found no NVIDIA GPU"


def test_summary_reads_gpu_util_and_memory():
    r = run([0] * 20, [10] * 20)
    gpu = GpuReading(0, 80.0, 5 * 2**30, 80 * 2**30, 300.0, 1800.0)
    samples = tuple(Sample(t * MS, cpu([10, 10]), (gpu,)) for t in (50, 150))
    s = summarize(r, SampleLog(interval_s=0.1, samples=samples))
    assert s.gpu_util_pct == 80.0 and s.gpu_memory_used_max_bytes == 5 * 2**30 and s.gpu_util_reason is None


def test_rate_ratio_interval_is_conservative():
    from tests.summaries import summary

    r = rate_ratio(summary("synthetic", 100, rel_ci=0.1), summary("pipeline", 50, rel_ci=0.1))
    assert r.value == 2.0
    assert r.low < 2.0 < r.high and r.clearly_above_one
    assert rate_ratio(summary("synthetic", 100), None) is None


def _gpu(index, util, used=2**30):
    return GpuReading(index=index, util_pct=util, memory_used_bytes=used, memory_total_bytes=2**34, power_w=300.0,
                      sm_clock_mhz=1980.0)


def test_every_gpu_the_job_used_gets_its_window_and_the_mode_their_mean():
    from pipediag.records.readings import GpuDevice

    devices = (GpuDevice(2, "H200", 2**34, "GPU-c"), GpuDevice(0, "H200", 2**34, "GPU-a"))
    samples = tuple(Sample(t * 100 * MS, cpu([50, 50]), (_gpu(0, 30.0, 5 * 2**30), _gpu(2, 90.0)))
                    for t in range(1, 11))
    log = SampleLog(interval_s=0.1, samples=samples, gpu_devices=devices)
    m = summarize(run([0] * 10, [100] * 10), log)
    assert [(w.index, w.uuid, w.util_pct) for w in m.gpus] == [(2, "GPU-c", 90.0), (0, "GPU-a", 30.0)]
    assert m.gpu is m.gpus[0]  # the first GPU chosen
    assert m.gpu_util_pct == 60.0  # the mean of the GPUs, not one of them
    assert m.gpu_memory_used_max_bytes == 5 * 2**30  # the fullest GPU


def test_one_gpu_reads_as_before():
    samples = tuple(Sample(t * 100 * MS, cpu([50, 50]), (_gpu(0, 70.0),)) for t in range(1, 11))
    m = summarize(run([0] * 10, [100] * 10), SampleLog(interval_s=0.1, samples=samples))
    assert m.gpus == () and m.gpu.index == 0 and m.gpu_util_pct == 70.0


def test_a_window_at_two_speeds_carries_its_regimes_and_they_survive_the_json():
    from pipediag.analysis.modes import summary_from_dict

    log = SampleLog(interval_s=0.1, samples=(), gpu_unavailable_reason="no GPU")
    steady = summarize(run([0] * 100, [20] * 100, name="synthetic"), log)
    switched = summarize(run([0] * 100, [20] * 30 + [40] * 70, name="synthetic"), log)
    assert steady.regimes is None
    assert switched.regimes is not None and switched.regimes.median_in_slow
    assert switched.regimes.fast_ms == 20.0 and switched.regimes.slow_ms == 40.0
    assert summary_from_dict(switched.to_dict()).regimes == switched.regimes
