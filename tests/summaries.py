"""Plain-number ModeSummary factories for the verdict, fixes and report tests."""

from pipediag.analysis.gpu import Gpm, GpuWindow
from pipediag.analysis.modes import ModeSummary
from pipediag.analysis.waiting import CpuWhileWaiting
from pipediag.records.run import ErrorInfo

GiB = 2**30


def waiting_cpu(per_core, purity=1.0, iowait=None, process=None):
    return CpuWhileWaiting(
        weight_s=5.0, purity=purity, busy_cores=sum(per_core) / 100.0, per_core_pct=tuple(per_core),
        process_pct=sum(per_core) if process is None else process, iowait_pct=iowait, cores=len(per_core),
    )


def summary(name, rate, *, rel_ci=0.03, wait=0.0, steps=100, compute_ms=None, gpu_util=None, gpu_reason="NVML could not start",
            gpu_mem=None, gpu_total=None, per_core=None, waiting=None, stop="stable", error=None,
            available=12 * GiB, total=24 * GiB, rss=2 * GiB, iowait=None, process=None, gpm=None, gpm_reason=None):
    """`gpm`: dict of Gpm fields (sm_active_pct, tensor_active_pct, dram_bw_pct, ...), or None;
    with gpu_util given, the mode gets a GpuWindow (with GPM when `gpm` is given).
    `process`: this process's CPU % (100 = one core); defaults to the sum of `per_core`."""
    step_ms = 1000.0 / rate if rate else None
    window = None
    if gpu_util is not None:
        g = None
        if gpm is not None:
            values = dict(sm_active_pct=None, sm_occupancy_pct=None, tensor_active_pct=None, dram_bw_pct=None,
                          fp32_active_pct=None, fp16_active_pct=None, samples=30)
            values.update(gpm)
            g = Gpm(**values)
        window = GpuWindow(util_pct=gpu_util, util_source="utilization_rates", util_readings=30, power_w_mean=300.0,
                           sm_clock_mhz_mean=1980.0, mem_clock_mhz_mean=3201.0, pcie_tx_bytes_per_s_mean=None,
                           pcie_rx_bytes_per_s_mean=None, process_memory_max_bytes=None, gpm=g,
                           gpm_reason=None if g else (gpm_reason or "GPM is not supported on this GPU"))
    return ModeSummary(
        name=name, steps=steps, batches_per_sec=rate,
        batches_per_sec_ci=None if rate is None else (rate * (1 - rel_ci), rate * (1 + rel_ci)),
        step_ms_median=step_ms, step_ms_p90=None if step_ms is None else step_ms * 1.2,
        step_ms_median_ci=None,
        wait_ms_median=None if step_ms is None else step_ms * wait,
        compute_ms_median=compute_ms if compute_ms is not None else (None if step_ms is None else step_ms * (1 - wait)),
        input_wait_frac=wait if name in ("pipeline", "tuned") else 0.0,
        first_step_ms=500.0 if name == "synthetic" else None, warmup_steps=5, stop_reason=stop, error=error,
        cpu_util_pct=None if per_core is None else sum(per_core) / len(per_core),
        cpu_per_core_pct=None if per_core is None else tuple(per_core),
        process_cpu_pct=process if process is not None else (None if per_core is None else sum(per_core)),
        iowait_pct=iowait, cpu_while_waiting=waiting,
        gpu_util_pct=gpu_util, gpu_util_reason=gpu_reason if gpu_util is None else None,
        gpu_memory_used_max_bytes=gpu_mem, gpu_memory_total_bytes=gpu_total,
        rss_max_bytes=rss, host_available_min_bytes=available, host_total_bytes=total, samples=50,
        gpu=window,
    )


def oom_error():
    return ErrorInfo(type="ResourceExhaustedError", message="OOM when allocating tensor with shape[4096,65536]",
                     framework="tensorflow")


def environment(**overrides):
    from pipediag.records.environment import Environment

    values = dict(pipediag_version="0.1.0", python_version="3.11.7", platform="Linux x86_64", cpu_logical=2,
                  cpu_physical=1, memory_total_bytes=24 * GiB, tensorflow_version="2.21.0", tensorflow_cuda_build=False,
                  tensorflow_devices=("CPU:0",), gpu_unavailable_reason="NVML could not start")
    values.update(overrides)
    return Environment(**values)


def diagnosis(modes=None, verdict=None, fixes=(), tuning=(), tried=(), status="complete", notes=(), anatomy=None,
              ablation=None, stages=None):
    from pipediag.records.element import ElementInfo, Leaf
    from pipediag.records.readings import CpuReading, Sample, SampleLog
    from pipediag.records.run import ModeRun
    from pipediag.records.stage import Stage
    from pipediag.records.step import StepInfo
    from pipediag.results.diagnose import Diagnosis

    modes = modes if modes is not None else {
        "synthetic": summary("synthetic", 200.0),
        "pipeline": summary("pipeline", 50.0, wait=0.7),
        "input_only": summary("input_only", 52.0),
        "tuned": summary("tuned", 150.0, wait=0.1),
    }
    runs = {
        name: ModeRun(name=name, start_ns=0, end_ns=10**9, wait_ns=(1, 2), compute_ns=(3, 4), first_step_ns=None,
                      warmup_steps=1, warmup_ns=5, stop_reason="stable")
        for name in modes
    }
    cpu = CpuReading(50.0, (60.0, 40.0), 100.0, 0.0, 2**30, 12 * GiB, 24 * GiB)
    return Diagnosis(
        status=status, target="data.py:make_dataset",
        step=StepInfo(kind="standin", description="stand-in model (an MLP)"),
        environment=environment(),
        element=ElementInfo(leaves=(Leaf("[0]", "dense", "float32", (None, 8)), Leaf("[1]", "dense", "int64", (None,))),
                            batch_size=16, batch_bytes=640),
        cardinality="infinite", first_batch_ms=12.0,
        stages=stages if stages is not None else (
            Stage(0, "TensorSliceDataset/_1", "TensorSliceDataset", "source"),
            Stage(1, "MapDataset/_2", "MapDataset", "map", function="decode_example", parallelism=1, is_random=True),
            Stage(2, "BatchDatasetV2/_3", "BatchDatasetV2", "batch", buffer_size=16)),
        runs=runs, modes=modes, tuning=tuple(tuning), tuned_check="checked", cache_fill_ms=None,
        verdict=verdict, fixes=tuple(fixes), tried=tuple(tried),
        samples=SampleLog(interval_s=0.1, samples=(Sample(5, cpu), Sample(10, cpu))),
        settings={"batch_size": 16}, notes=tuple(notes), elapsed_s=21.5, created_at="2026-11-30T10:00:00+00:00",
        anatomy=anatomy, ablation=ablation,
    )


def anatomy_and_stages():
    """A measured-looking anatomy of the default pipeline: the map is slow (plain numbers)."""
    from pipediag.analysis.waterfall import StageTiming, build_anatomy
    from pipediag.records.stage import Stage

    stages = (
        Stage(0, "TensorSliceDataset/_1", "TensorSliceDataset", "source", cardinality=64, bytes_per_element=26_000.0),
        Stage(1, "MapDataset/_2", "MapDataset", "map", function="decode_example", parallelism=1, is_random=True,
              cardinality="infinite", bytes_per_element=49_152.0),
        Stage(2, "BatchDatasetV2/_3", "BatchDatasetV2", "batch", buffer_size=16, cardinality="infinite",
              bytes_per_element=786_432.0),
    )

    def timing(index, per_sec, per_chunk):
        ns = tuple(int(per_chunk / per_sec * 1e9 * f) for f in (0.98, 1.02) * 4)
        return StageTiming(index, chunk_elements=(per_chunk,) * 8, chunk_ns=ns, stop_reason="stable")

    timings = {0: timing(0, 16_000, 100), 1: timing(1, 800, 16), 2: timing(2, 48, 2)}
    return build_anatomy(list(stages), timings, seconds=1.2), stages
