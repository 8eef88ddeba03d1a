"""Per-mode numbers: throughput with its interval, step-time percentiles, input wait, CPU/GPU use."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from pipediag import stats
from pipediag.analysis.gpu import GpuWindow, PeakMemory, gpu_windows, peak_memory
from pipediag.analysis.regimes import Regimes, find_regimes
from pipediag.analysis.waiting import CpuWhileWaiting, cpu_while_waiting
from pipediag.records.container import Throttling, throttling
from pipediag.records.readings import Sample, SampleLog
from pipediag.records.run import ErrorInfo, ModeRun

NS_PER_MS = 1e6


@dataclass(frozen=True)
class ModeSummary:
    name: str
    steps: int
    batches_per_sec: float | None  # steps / time: the mean rate, what an epoch would see
    batches_per_sec_ci: tuple[float, float] | None  # 95%, from the batch-means interval of the mean
    step_ms_median: float | None
    step_ms_p90: float | None
    step_ms_median_ci: tuple[float, float] | None
    wait_ms_median: float | None
    compute_ms_median: float | None
    input_wait_frac: float | None  # share of step time spent waiting for the batch
    first_step_ms: float | None  # tracing and compiling included, never in the steady state
    warmup_steps: int
    stop_reason: str
    error: ErrorInfo | None  # what stopped the mode early, e.g. an out-of-memory error
    cpu_util_pct: float | None  # mean over samples, all cores: 100 = every core busy
    cpu_per_core_pct: tuple[float, ...] | None
    process_cpu_pct: float | None  # 100 = one core
    iowait_pct: float | None
    cpu_while_waiting: CpuWhileWaiting | None
    gpu_util_pct: float | None  # mean NVML utilisation over the mode's window; with N GPUs, the mean of theirs
    gpu_util_reason: str | None  # why gpu_util_pct is None
    gpu_memory_used_max_bytes: int | None  # the whole device (every process, preallocation included); the fullest GPU
    gpu_memory_total_bytes: int | None
    rss_max_bytes: int | None
    host_available_min_bytes: int | None
    host_total_bytes: int | None
    samples: int
    gpu: GpuWindow | None = None  # the first GPU in detail: util source, GPM, power, clocks, PCIe
    peak_memory: PeakMemory | None = None  # the step's device memory: the framework's peak, else NVML's
    peak_memory_reason: str | None = None  # why peak_memory is None
    compute_ms_median_ci: tuple[float, float] | None = None  # 95%, order statistics of the step's own times
    # The first step of each batch shape new to the mode (a retrace), kept out like the first step.
    new_shape_steps_ms: tuple[float, ...] = ()
    # Every GPU the job used, in detail, when it used more than one (`gpu` is the first of them).
    gpus: tuple[GpuWindow, ...] = ()
    # The container's limit (docs/verdict.md, "The container"): the cores this process may use,
    # and what its CPU quota did during the mode (None with the reason where there is no quota).
    effective_cores: float | None = None
    throttling: Throttling | None = None
    throttling_reason: str | None = None
    # The window's steps ran at two speeds in stretches (analysis.regimes); None: at one speed.
    regimes: Regimes | None = None

    @property
    def cores(self) -> float | None:
        """The cores this mode could use: the container's effective ones, else the host's sampled."""
        if self.effective_cores is not None:
            return self.effective_cores
        return float(len(self.cpu_per_core_pct)) if self.cpu_per_core_pct else None

    @property
    def measured(self) -> bool:
        return self.steps > 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["step_ms"] = {"median": self.step_ms_median, "p90": self.step_ms_p90, "median_ci": self.step_ms_median_ci}
        d["throttling"] = None if self.throttling is None else self.throttling.to_dict()
        return d


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(run: ModeRun, log: SampleLog) -> ModeSummary:
    samples = log.between(run.start_ns, run.end_ns)
    step_ns = run.step_ns
    n = len(step_ns)
    total_ns = sum(step_ns)
    rate = n / (total_ns / 1e9) if n and total_ns > 0 else None
    mean_ci = stats.batch_means_ci(step_ns) if n else None
    rate_ci = None
    if mean_ci is not None and mean_ci[0] > 0:
        rate_ci = (1e9 / mean_ci[1], 1e9 / mean_ci[0])
    median_ci = stats.median_ci(step_ns) if n else None

    windows = gpu_windows(samples, log)
    window = windows[0] if windows else None
    gpu_util = [w.util_pct for w in windows if w.util_pct is not None]
    # The GPU whose process memory peaked highest speaks for the step's memory (the same on each
    # data-parallel replica, but a device holding more, e.g. variables, is the one that runs out).
    fullest = max(windows, key=lambda w: w.process_memory_max_bytes or -1, default=None)
    peak, peak_reason = peak_memory(run.device_memory, fullest, log)
    used = {w.index for w in windows}
    gpu_mem = [(g.memory_used_bytes, g.memory_total_bytes) for s in samples for g in s.gpus
               if g.index in used and g.memory_used_bytes is not None]
    top = max(gpu_mem, key=lambda m: m[0], default=None)
    gpu_total = top[1] if top else next((g.memory_total_bytes for s in samples for g in s.gpus[:1]
                                         if g.memory_total_bytes), None)
    if log.gpu_unavailable_reason:
        gpu_reason = log.gpu_unavailable_reason
    elif not gpu_util:
        gpu_reason = log.gpu_metric_reasons.get("util_pct") or ("no samples in this mode's window" if not samples else None)
    else:
        gpu_reason = None
    cores = len(samples[0].cpu.per_core_pct) if samples else 0
    throttled, throttled_reason = throttling_in(samples, log)
    iowaits = [s.cpu.iowait_pct for s in samples if s.cpu.iowait_pct is not None]
    return ModeSummary(
        name=run.name,
        steps=n,
        batches_per_sec=rate,
        batches_per_sec_ci=rate_ci,
        step_ms_median=stats.median(step_ns) / NS_PER_MS if n else None,
        step_ms_p90=stats.percentile(step_ns, 90) / NS_PER_MS if n else None,
        step_ms_median_ci=None if median_ci is None else (median_ci[0] / NS_PER_MS, median_ci[1] / NS_PER_MS),
        wait_ms_median=stats.median(run.wait_ns) / NS_PER_MS if n else None,
        compute_ms_median=stats.median(run.compute_ns) / NS_PER_MS if n else None,
        input_wait_frac=sum(run.wait_ns) / total_ns if n and total_ns > 0 else None,
        first_step_ms=None if run.first_step_ns is None else run.first_step_ns / NS_PER_MS,
        warmup_steps=run.warmup_steps,
        stop_reason=run.stop_reason,
        error=run.error,
        cpu_util_pct=_mean([s.cpu.total_pct for s in samples]),
        cpu_per_core_pct=tuple(_mean([s.cpu.per_core_pct[k] for s in samples]) for k in range(cores)) if samples else None,
        process_cpu_pct=_mean([s.cpu.process_pct for s in samples]),
        iowait_pct=_mean(iowaits),
        cpu_while_waiting=within_limit(cpu_while_waiting(run, samples, int(log.interval_s * 1e9)), log),
        gpu_util_pct=_mean(gpu_util),
        gpu_util_reason=gpu_reason,
        gpu_memory_used_max_bytes=top[0] if top else None,
        gpu_memory_total_bytes=gpu_total,
        rss_max_bytes=max((s.cpu.rss_bytes for s in samples), default=None),
        host_available_min_bytes=min((s.cpu.available_bytes for s in samples), default=None),
        host_total_bytes=samples[0].cpu.total_bytes if samples else None,
        samples=len(samples),
        gpu=window,
        peak_memory=peak,
        peak_memory_reason=peak_reason,
        compute_ms_median_ci=_ms_ci(stats.median_ci(run.compute_ns)) if n else None,
        new_shape_steps_ms=tuple(ns / NS_PER_MS for ns in run.new_shape_steps_ns),
        gpus=windows if len(windows) > 1 else (),
        effective_cores=None if log.container is None else log.container.effective_cores,
        throttling=throttled,
        throttling_reason=throttled_reason,
        regimes=find_regimes(step_ns),
    )


def within_limit(waiting: CpuWhileWaiting | None, log: SampleLog) -> CpuWhileWaiting | None:
    """The CPU picture with the container's effective cores, against which it is judged."""
    if waiting is None or log.container is None:
        return waiting
    return replace(waiting, effective_cores=log.container.effective_cores)


def throttling_in(samples: tuple[Sample, ...], log: SampleLog) -> tuple[Throttling | None, str | None]:
    """What the CPU quota did over a window: the counters' delta between its first and last sample
    that read them (the sampler reads them with the CPU), or None with the reason."""
    container = log.container
    if container is None:
        return None, "the container's limits were not read (a file from an older pipediag)"
    if container.cpu_stat_path is None:
        return None, container.throttle_reason or "no CPU quota"
    read = [s for s in samples if s.throttle is not None]
    if len(read) < 2:
        return None, "fewer than two samples read the throttling counters in this mode's window"
    first, last = read[0], read[-1]
    delta = throttling(first.throttle, last.throttle, (last.time_ns - first.time_ns) / 1e9, container.quota_cores)
    if delta is None:
        return None, "the throttling counters went back during the mode (the cgroup was recreated)"
    return delta, None


def _ms_ci(ci: tuple[float, float] | None) -> tuple[float, float] | None:
    return None if ci is None else (ci[0] / NS_PER_MS, ci[1] / NS_PER_MS)


@dataclass(frozen=True)
class Ratio:
    """a / b of two rates, with a conservative interval from their two intervals."""

    value: float
    low: float | None
    high: float | None

    @property
    def clearly_above_one(self) -> bool:
        return self.low is not None and self.low > 1.0

    @property
    def clearly_below_one(self) -> bool:
        return self.high is not None and self.high < 1.0


def rate_ratio(a: ModeSummary | None, b: ModeSummary | None) -> Ratio | None:
    if a is None or b is None:
        return None
    return ratio_of(a.batches_per_sec, a.batches_per_sec_ci, b.batches_per_sec, b.batches_per_sec_ci)


def ratio_of(a: float | None, a_ci: tuple[float, float] | None, b: float | None,
             b_ci: tuple[float, float] | None) -> Ratio | None:
    """a / b of two rates; the interval pairs the far ends of the two 95% intervals."""
    if not a or not b:
        return None
    low = high = None
    if a_ci and b_ci and b_ci[0] > 0:
        low = a_ci[0] / b_ci[1]
        high = a_ci[1] / b_ci[0]
    return Ratio(a / b, low, high)


def summary_from_dict(d: dict[str, Any]) -> ModeSummary:
    d = {k: v for k, v in d.items() if k != "step_ms"}
    for key in ("batches_per_sec_ci", "step_ms_median_ci", "cpu_per_core_pct", "compute_ms_median_ci",
                "new_shape_steps_ms"):
        if d.get(key) is not None:
            d[key] = tuple(d[key])
    if d.get("error") is not None:
        d["error"] = ErrorInfo(**d["error"])
    w = d.get("cpu_while_waiting")
    if w is not None:
        d["cpu_while_waiting"] = CpuWhileWaiting(**{**w, "per_core_pct": tuple(w["per_core_pct"])})
    if d.get("gpu") is not None:
        d["gpu"] = GpuWindow.from_dict(d["gpu"])
    d["gpus"] = tuple(GpuWindow.from_dict(g) for g in d.get("gpus") or ())
    if d.get("peak_memory") is not None:
        d["peak_memory"] = PeakMemory(**d["peak_memory"])
    if d.get("throttling") is not None:
        d["throttling"] = Throttling.from_dict(d["throttling"])
    if d.get("regimes") is not None:
        d["regimes"] = Regimes(**d["regimes"])
    return ModeSummary(**d)


MIN_WAIT_PURITY = 0.8  # below this, samples mix waiting with the step's own CPU use


@dataclass(frozen=True)
class InputSideCpu:
    cpu: CpuWhileWaiting
    where: str  # "while the step waited" or "while the pipeline ran alone (input_only mode)"


def input_side_cpu(pipeline: ModeSummary | None, input_only: ModeSummary | None) -> InputSideCpu | None:
    """The CPU picture of the input side. Preferably the samples taken while the fed step waited;
    but when waits are short next to the sampling period (a 5 ms wait in a 100 ms sample), those
    samples mostly show the step's own CPU use, so the pipeline running alone says more."""
    waiting = pipeline.cpu_while_waiting if pipeline else None
    if waiting is not None and waiting.purity >= MIN_WAIT_PURITY:
        return InputSideCpu(waiting, "while the step waited")
    if input_only is not None and input_only.cpu_per_core_pct:
        per_core = input_only.cpu_per_core_pct
        alone = CpuWhileWaiting(
            weight_s=input_only.steps / input_only.batches_per_sec if input_only.batches_per_sec else 0.0,
            purity=1.0,
            busy_cores=sum(per_core) / 100.0,
            per_core_pct=per_core,
            process_pct=input_only.process_cpu_pct or 0.0,
            iowait_pct=input_only.iowait_pct,
            cores=len(per_core),
            effective_cores=input_only.effective_cores,
        )
        return InputSideCpu(alone, "while the pipeline ran alone (input_only mode)")
    if waiting is not None:
        return InputSideCpu(waiting, "while the step waited (mixed with the step's own CPU use)")
    return None
