"""`scale()`: the user's pipeline on tf.data service, worker count by worker count, and a plan.

    builder ─▶ local modes (synthetic · local input) ─▶ service (transfer · per worker count:
            input only, step fed) ─▶ capacity plan ─▶ ScaleResult

Locally, pipediag starts a dispatcher and the workers as processes on this host and stops them
all at the end, also on errors and Ctrl-C; with `service=` it uses an existing deployment and
starts nothing. Library code: it returns an object and prints nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from pipediag.analysis.modes import summarize
from pipediag.analysis.scale import (
    REMOTE,
    CountRate,
    RateEstimate,
    placement,
    plan_capacity,
    service_overhead,
    worker_busy,
)
from pipediag.analysis.visitation import PROCESSING_MODES, visitation
from pipediag.api.diagnose import SilentProgress
from pipediag.api.options import check_step_options, sample_hz, stop_rule_for
from pipediag.api.scale_measure import Checked, Interrupts, Measure, ScaleRun, measure_local_service, prepare
from pipediag.errors import PipediagError, UsageError
from pipediag.modes.watchdog import Watchdog
from pipediag.records.container import ContainerLimits
from pipediag.records.kinds import COMPLETE, FAILED, INTERRUPTED, STALLED
from pipediag.records.options import RunOptions, run_options
from pipediag.records.run import StopRule
from pipediag.records.stall import Stalled
from pipediag.results.scale import CountResult, ScaleResult, ServiceInfo
from pipediag.samples.container import read_limits
from pipediag.samples.environment import collect
from pipediag.samples.gpu import GpuReader
from pipediag.samples.sampler import Sampler
from pipediag.samples.selection import GpuSelection
from pipediag.service.cluster import host_cores, parse_address, probe

DEFAULT_ACCELERATORS = (1, 8)


def plan_cores(host: int, container: ContainerLimits) -> int:
    """The whole cores the capacity plan may count: the host's, or fewer under a container's
    limit (a 2.5-core quota gives 2 workers a core each, not 3: the third would share the quota)."""
    return max(1, min(host, math.floor(container.effective_cores + 1e-9)))


def container_limit_text(container: ContainerLimits | None) -> str | None:
    return container.cpu_text() if container is not None and container.cpu_limited else None


def default_workers(worker_cores: int, cores: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to the number of workers this host's cores hold (at least 1)."""
    most = max(1, cores // worker_cores)
    counts, n = [], 1
    while n <= most:
        counts.append(n)
        n *= 2
    return tuple(counts)


def scale(
    builder: Callable[..., Any] | Any,
    *,
    options: RunOptions | None = None,
    workers: Sequence[int] | None = None,
    worker_cores: int = 1,
    service: str | None = None,
    remote_workers: int | None = None,
    processing_mode: str = "parallel_epochs",
    accelerators: Sequence[int] = DEFAULT_ACCELERATORS,
    compute_rate: float | None = None,
    stop_rule: StopRule | None = None,
    start_timeout_s: float = 120.0,
    contact_timeout_s: float = 60.0,
    **run_options_given: Any,
) -> ScaleResult:
    """Measure the pipeline through tf.data service and plan the workers.

    workers: local worker counts to measure, e.g. (1, 2, 4); each worker is a process pinned to
    `worker_cores` cores. service: `grpc://host:port` of an existing dispatcher instead (then
    `remote_workers` may say how many workers it has). accelerators: counts to plan for.
    compute_rate: batches/s one accelerator takes; by default the step's rate with free input
    measured here (synthetic mode). options (or the same as keyword arguments), stop_rule: as
    for `diagnose()`.

    Ctrl-C or SIGTERM (when called from the main thread, over Python's default handlers) stops
    the servers and returns what was measured, with status "interrupted". A batch or step that
    takes longer than `stall_timeout_s` (see `diagnose`) — a worker killed mid-run, a dispatcher
    gone — does the same with status "stalled".
    """
    opts = run_options(options, "scale", **run_options_given)
    check_step_options(opts)
    cores = host_cores()
    container = read_limits()
    usable = plan_cores(len(cores), container)
    counts = _check_arguments(len(cores), usable, workers, worker_cores, service, remote_workers, processing_mode,
                              accelerators, compute_rate)
    address = parse_address(service) if service is not None else None  # (target, host, port)
    remote = address is not None

    rule = stop_rule_for(opts, stop_rule)
    started = opts.clock_ns()
    state = ScaleRun(target=opts.label_for(builder))
    sampler = Sampler(gpu_reader=GpuReader(opts.nvml_lib, gpus=GpuSelection.choose(opts.gpus)), hz=sample_hz(opts),
                      clock_ns=opts.clock_ns, container=container)
    with Interrupts() as interrupts:
        progress = Checked(opts.progress or SilentProgress(), interrupts)
        progress.phase("reading the environment")
        state.environment = collect(nvml_lib=opts.nvml_lib, container=container)
        sampler.start()
        watchdog = Watchdog(opts.stall_timeout_s)
        try:
            if remote:  # before minutes of local measurement, not after
                progress.phase(f"checking the dispatcher at {address[1]}:{address[2]}")
                probe(address[1], address[2], timeout_s=min(contact_timeout_s, 10.0))
            dataset, the_step, first_batch = prepare(state, builder, opts, progress, watchdog)
            measure = Measure(state, dataset, the_step, first_batch, rule, processing_mode,
                               contact_timeout_s, progress, interrupts.check, opts.clock_ns, watchdog)
            measure.local()
            if remote:
                state.service_target = address[0]
                measure.transfer(address[0], None)
                measure.count(address[0], None, None)
            else:
                measure_local_service(state, measure, counts, worker_cores, start_timeout_s, progress)
        except KeyboardInterrupt:
            state.interrupted = True
        except Stalled as stall:
            _ended_by(state, stall=stall)
        except PipediagError as error:  # a worker killed mid-run (ServiceError), the user's code raising
            if not state.runs:
                raise  # nothing measured yet: the error is the whole answer
            _ended_by(state, failure=error)
        finally:
            log = sampler.stop()
    if sampler.error is not None:
        state.notes.append(f"the sampler stopped early: {type(sampler.error).__name__}: {sampler.error}")
    return _conclude(state, log, rule, usable, worker_cores, remote, remote_workers, processing_mode, accelerators,
                     compute_rate, opts.batch_size, opts.batch_format, counts, (opts.clock_ns() - started) / 1e9)


def _ended_by(state: ScaleRun, stall: Stalled | None = None, failure: PipediagError | None = None) -> None:
    """A stall or a failure after some modes ran: recorded, with the note that says so first."""
    if stall is not None:
        state.stall = str(stall)
        state.notes.insert(0, f"stalled in {stall}; the modes measured before it are kept, the later ones were not run")
    else:
        state.failure = failure
        state.notes.insert(0, f"failed: {failure.message}; the modes measured before it are kept, the later "
                              "ones were not run")


def _check_arguments(host_cores: int, usable: int, workers, worker_cores: int, service, remote_workers,
                     processing_mode: str, accelerators, compute_rate) -> tuple[int, ...]:
    """scale()'s own arguments checked (a HINT each); the worker counts to measure."""
    if processing_mode not in PROCESSING_MODES:
        raise UsageError(f"unknown processing mode {processing_mode!r}", f"use one of {', '.join(PROCESSING_MODES)}")
    if service is not None and workers is not None:
        raise UsageError("--workers starts local workers; --service uses an existing deployment's workers",
                         "give one of them (with --service, --remote-workers N says how many workers it has)")
    if remote_workers is not None and service is None:
        raise UsageError("--remote-workers describes a deployment given with --service", "add --service grpc://HOST:PORT")
    if worker_cores < 1 or worker_cores > host_cores:
        raise UsageError(f"--worker-cores {worker_cores}: this host has {host_cores} core(s) to pin workers to",
                         f"give 1 to {host_cores}")
    counts = tuple(sorted(set(workers))) if workers else default_workers(worker_cores, usable)
    if any(n < 1 for n in counts) or any(a < 1 for a in accelerators) or (remote_workers is not None and remote_workers < 1):
        raise UsageError("worker and accelerator counts must be positive", "e.g. --workers 1,2,4 --accelerators 1,8")
    if compute_rate is not None and compute_rate <= 0:
        raise UsageError("--compute-rate must be positive", "batches/s one accelerator takes with free input")
    return counts



def _conclude(state: ScaleRun, log, rule: StopRule, cores: int, worker_cores: int, remote: bool,
              remote_workers: int | None, processing_mode: str, accelerators, compute_rate, batch_size,
              batch_format, counts, elapsed_s: float) -> ScaleResult:
    modes = {name: summarize(run, log) for name, run in state.runs.items()}
    results = [_count_result(record, log, worker_cores, cores) for record in state.counts]
    count_rates = [CountRate(c.workers, RateEstimate.of(c.input_only)) for c in results]
    local = RateEstimate.of(modes.get("local_input_only"))
    transfer = RateEstimate.of(modes.get("transfer"))
    synthetic = RateEstimate.of(modes.get("synthetic"))
    if compute_rate is not None:
        compute, source = RateEstimate(compute_rate), f"{compute_rate:g} batches/s per accelerator, as given (--compute-rate)"
    else:
        compute, source = _per_device_appetite(state, synthetic)
    plan = overhead = None
    if synthetic is not None or compute_rate is not None:
        plan = plan_capacity(
            compute=compute, compute_source=source, local=local, counts=count_rates, transfer=transfer,
            transfer_worker_busy=worker_busy(state.transfer_worker_cpu, None if remote else worker_cores),
            transfer_client_busy=None if modes.get("transfer") is None or modes["transfer"].process_cpu_pct is None
            else modes["transfer"].process_cpu_pct / 100.0,
            accelerators=accelerators, worker_cores=None if remote else worker_cores, host_cores=cores,
            remote=remote, remote_workers=remote_workers,
        )
    if transfer is not None or count_rates:
        overhead = service_overhead(
            transfer=transfer, transfer_workers=state.transfer_workers, transfer_worker_cpu_pct=state.transfer_worker_cpu,
            batch_bytes=state.element.batch_bytes if state.element else None, local=local, counts=count_rates,
            worker_cores=worker_cores, host_cores=cores, remote=remote,
        )
    visit_workers = remote_workers if remote else (max(c.workers for c in results) if results else None)
    service_info = _service_info(state, remote, processing_mode)
    return ScaleResult(
        status=(INTERRUPTED if state.interrupted else STALLED if state.stall
                else FAILED if state.failure else COMPLETE),
        error=state.failure,
        target=state.target,
        step=state.step.described() if state.step else None,
        environment=state.environment,
        element=state.element,
        cardinality=state.cardinality,
        stages=state.stages,
        service=service_info,
        modes=modes,
        runs=dict(state.runs),
        counts=tuple(results),
        overhead=overhead,
        plan=plan,
        visitation=visitation(processing_mode, visit_workers, state.cardinality, state.stages) if state.stages else (),
        samples=log,
        settings={
            "workers": None if remote else list(counts),
            "worker_cores": None if remote else worker_cores,
            "host_cores": cores,  # the cores the plan counts: the container's limit, when lower
            "cpu_limit": container_limit_text(log.container),
            "service": "remote" if remote else "local",
            "remote_workers": remote_workers,
            "processing_mode": processing_mode,
            "accelerators": sorted(set(accelerators)),
            "compute_rate": compute_rate,
            "batch_size": batch_size,
            "batch_format": batch_format,
            "max_seconds_per_mode": rule.max_seconds,
            "sample_interval_s": log.interval_s,
        },
        notes=tuple(state.notes),
        elapsed_s=elapsed_s,
    )


def _count_result(record: dict[str, Any], log, worker_cores: int, cores: int) -> CountResult:
    """One worker count's measured modes, summarized."""
    n = record["workers"]
    input_run, fed_run = record.get("input_only"), record.get("fed")
    return CountResult(
        workers=n,
        placement=REMOTE if n is None else placement(n, worker_cores, cores),
        input_only=None if input_run is None else summarize(input_run, log),
        fed=None if fed_run is None else summarize(fed_run, log),
        input_only_run=input_run,
        fed_run=fed_run,
        worker_cpu_pct=record.get("worker_cpu_pct"),
        worker_cpu_reason=record.get("worker_cpu_reason"),
    )


def _service_info(state: ScaleRun, remote: bool, processing_mode: str) -> ServiceInfo | None:
    """The service that was measured, and a note when its processes did not all end cleanly."""
    service_info = None
    if state.service_target is not None:
        service_info = ServiceInfo(kind="remote" if remote else "local", target=state.service_target,
                                   processing_mode=processing_mode, servers=state.servers, shutdown=state.shutdown)
    if state.shutdown is not None and not state.shutdown.clean:
        state.notes.append(
            "the tf.data service processes did not all end cleanly: "
            + ", ".join(f"{k}: {v}" for k, v in state.shutdown.ended.items() if v != "clean")
            + (f"; still alive: {list(state.shutdown.leftover_pids)}" if state.shutdown.leftover_pids else "")
            + (f"; ports still listening: {list(state.shutdown.leftover_ports)}" if state.shutdown.leftover_ports else "")
            + (f"; their logs are in {state.shutdown.log_dir}" if state.shutdown.log_dir else "")
        )
    return service_info


def _per_device_appetite(state: ScaleRun, synthetic: RateEstimate | None) -> tuple[RateEstimate | None, str]:
    """One accelerator's rate, from the step with free input (synthetic mode). A step that ran on N
    devices (steps.placement) took N devices' worth of global batches, each device 1/N of each batch:
    one device's appetite is that rate / N, in the same global batches, and the plan's demand for A
    accelerators is A times it."""
    from pipediag.steps.placement import accelerators

    gpu = _step_on_gpu(state)
    devices = accelerators(state.step.described().devices) if state.step is not None else ()
    n = len(devices)
    if synthetic is None or n < 2:
        return synthetic, ("the step with free input (synthetic mode) on this host's GPU" if gpu else
                           "the step with free input (synthetic mode) on this host's CPU: there is no accelerator "
                           "here, so give --compute-rate with your accelerator's rate (synthetic mode of pipediag "
                           "diagnose there)")
    names = f"{devices[0]}–{devices[-1]}" if n > 2 else " and ".join(devices)
    where = (f"on this host's {n} GPUs ({names})" if gpu else
             f"on {n} host devices ({names}), not accelerators: give --compute-rate with your accelerator's rate")
    return synthetic.scaled(1.0 / n), (f"the step with free input (synthetic mode) {where}: "
                                       f"{synthetic.batches_per_sec:.1f} global batches/s together, / {n} = one "
                                       "device's appetite")


def _step_on_gpu(state: ScaleRun) -> bool:
    """Did the step run on a GPU? A TensorFlow step when TensorFlow sees one; a JAX or PyTorch
    step (seen in its results) when NVML sees one (they take the GPU by default; on the H200 a
    JAX step fed by the CPU build of TensorFlow did)."""
    env = state.environment
    if env is None:
        return False
    if any("GPU" in d for d in env.tensorflow_devices):
        return True
    framework = state.step.described().framework if state.step is not None else None
    return framework in ("jax", "torch") and bool(env.gpus)
