"""`scale()`: the user's pipeline on tf.data service, worker count by worker count, and a plan.

    builder ─▶ local modes (synthetic · local input) ─▶ service (transfer · per worker count:
            input only, step fed) ─▶ capacity plan ─▶ ScaleResult

Locally, pipediag starts a dispatcher and the workers as processes on this host and stops them
all at the end, also on errors and Ctrl-C; with `service=` it uses an existing deployment and
starts nothing. Library code: it returns an object and prints nothing.
"""

from __future__ import annotations

import gc
import math
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import psutil

from pipediag.analysis.scale import (
    REMOTE, CountRate, RateEstimate, placement, plan_capacity, service_overhead, worker_busy
)
from pipediag.analysis.modes import summarize
from pipediag.analysis.visitation import PROCESSING_MODES, visitation
from pipediag.api.diagnose import Progress, SilentProgress
from pipediag.builder import target as targets
from pipediag.records.environment import Environment
from pipediag.samples.environment import collect
from pipediag.errors import PipediagError, UsageError
from pipediag.records.run import ModeRun, StopRule
from pipediag.modes.runner import run_mode
from pipediag.records.stall import Stalled
from pipediag.modes.watchdog import Watchdog
from pipediag.samples.gpu import GpuReader
from pipediag.samples.selection import GpuSelection
from pipediag.samples.sampler import DEFAULT_HZ, Sampler
from pipediag.results.scale import CountResult, ScaleResult, ServiceInfo
from pipediag.records.container import ContainerLimits
from pipediag.samples.container import read_limits
from pipediag.service.cluster import LocalCluster, host_cores, parse_address, probe
from pipediag.records.service import ServerInfo, Shutdown
from pipediag.steps.step import BATCH_FORMATS, Step

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


class _Interrupts:
    """Ctrl-C and SIGTERM kept as a flag as well as raised as KeyboardInterrupt.

    Python raises KeyboardInterrupt wherever the main thread is when the signal handler runs.
    Inside a finalizer (TensorFlow objects have many, and pipediag collects garbage between modes
    so that finished service jobs are released) the exception is printed and dropped, and the run
    would go on with its servers. The flag survives that: every phase and every progress tick
    checks it. Installed only from the main thread and only over the default handlers, so a
    program that handles these signals itself keeps its own handling.
    """

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Interrupts:
        if threading.current_thread() is threading.main_thread():
            for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
                current = signal.getsignal(sig)
                # getsignal may give SIG_DFL as a plain 0; the CLI's SIGTERM handler is taken over too
                if current == default or getattr(current, "pipediag_interrupt", False):
                    self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handler(self, signum, frame) -> None:
        self.requested = True
        previous = self._previous.get(signum)
        if getattr(previous, "pipediag_interrupt", False):
            previous(signum, frame)  # the CLI's: it records SIGTERM (exit code 143) and raises
        raise KeyboardInterrupt

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt


class _Checked:
    """The caller's progress callback, checking for a pending interrupt at every call."""

    def __init__(self, progress: Progress, interrupts: _Interrupts):
        self.progress, self.interrupts = progress, interrupts

    def phase(self, text: str, check: bool = True) -> None:
        if check:
            self.interrupts.check()
        self.progress.phase(text)

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None:
        self.interrupts.check()
        self.progress.mode(name, elapsed_s, cap_s, steps)


@dataclass
class _Run:
    target: str
    environment: Environment | None = None
    step: Step | None = None
    element: Any = None
    cardinality: Any = None
    stages: tuple = ()
    interrupted: bool = False
    stall: str | None = None  # what stalled, when the run ended that way
    failure: Exception | None = None  # a server died or the user's code raised after some modes ran
    service_target: str | None = None
    servers: tuple[ServerInfo, ...] = ()
    shutdown: Shutdown | None = None
    transfer_workers: int | None = None
    transfer_worker_cpu: tuple[float, ...] | None = None
    runs: dict[str, ModeRun] = field(default_factory=dict)
    counts: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def scale(
    builder: Callable[..., Any] | Any,
    *,
    model: Any | None = None,
    step: Callable[[Any], Any] | None = None,
    builder_kwargs: dict[str, Any] | None = None,
    batch_size: int | None = None,
    batched: bool = False,
    batch_format: str = "tf",
    workers: Sequence[int] | None = None,
    worker_cores: int = 1,
    service: str | None = None,
    remote_workers: int | None = None,
    processing_mode: str = "parallel_epochs",
    accelerators: Sequence[int] = DEFAULT_ACCELERATORS,
    compute_rate: float | None = None,
    stop_rule: StopRule | None = None,
    sample_hz: float = DEFAULT_HZ,
    start_timeout_s: float = 120.0,
    contact_timeout_s: float = 60.0,
    nvml_lib: Any | None = None,
    label: str | None = None,
    step_label: str | None = None,
    progress: Progress | None = None,
    clock_ns: Callable[[], int] = time.monotonic_ns,
    stall_timeout_s: float | None = None,
    gpus: str | Sequence[int | str] | None = None,
) -> ScaleResult:
    """Measure the pipeline through tf.data service and plan the workers.

    workers: local worker counts to measure, e.g. (1, 2, 4); each worker is a process pinned to
    `worker_cores` cores. service: `grpc://host:port` of an existing dispatcher instead (then
    `remote_workers` may say how many workers it has). accelerators: counts to plan for.
    compute_rate: batches/s one accelerator takes; by default the step's rate with free input
    measured here (synthetic mode). Other arguments as for `diagnose()`.

    Ctrl-C or SIGTERM (when called from the main thread, over Python's default handlers) stops
    the servers and returns what was measured, with status "interrupted". A batch or step that
    takes longer than `stall_timeout_s` (see `diagnose`) — a worker killed mid-run, a dispatcher
    gone — does the same with status "stalled".
    """
    cores = host_cores()
    container = read_limits()
    usable = plan_cores(len(cores), container)
    if model is not None and step is not None:
        raise UsageError("give a model or a step, not both", "--model for a Keras model, --step for your own step")
    if batch_format not in BATCH_FORMATS:
        raise UsageError(f"unknown batch format {batch_format!r}", f"use one of {', '.join(BATCH_FORMATS)}")
    if processing_mode not in PROCESSING_MODES:
        raise UsageError(f"unknown processing mode {processing_mode!r}", f"use one of {', '.join(PROCESSING_MODES)}")
    if service is not None and workers is not None:
        raise UsageError("--workers starts local workers; --service uses an existing deployment's workers",
                         "give one of them (with --service, --remote-workers N says how many workers it has)")
    if remote_workers is not None and service is None:
        raise UsageError("--remote-workers describes a deployment given with --service", "add --service grpc://HOST:PORT")
    if worker_cores < 1 or worker_cores > len(cores):
        raise UsageError(f"--worker-cores {worker_cores}: this host has {len(cores)} core(s) to pin workers to",
                         f"give 1 to {len(cores)}")
    counts = tuple(sorted(set(workers))) if workers else default_workers(worker_cores, usable)
    if any(n < 1 for n in counts) or any(a < 1 for a in accelerators) or (remote_workers is not None and remote_workers < 1):
        raise UsageError("worker and accelerator counts must be positive", "e.g. --workers 1,2,4 --accelerators 1,8")
    if compute_rate is not None and compute_rate <= 0:
        raise UsageError("--compute-rate must be positive", "batches/s one accelerator takes with free input")
    remote = service is not None
    if remote:
        service_target, host, port = parse_address(service)

    rule = stop_rule or StopRule()
    started = clock_ns()
    label = label or getattr(builder, "__name__", type(builder).__name__)
    state = _Run(target=label)
    sampler = Sampler(gpu_reader=GpuReader(nvml_lib, gpus=GpuSelection.choose(gpus)), hz=sample_hz,
                      clock_ns=clock_ns, container=container)
    with _Interrupts() as interrupts:
        progress = _Checked(progress or SilentProgress(), interrupts)
        progress.phase("reading the environment")
        state.environment = collect(nvml_lib=nvml_lib, container=container)
        sampler.start()
        watchdog = Watchdog(stall_timeout_s)
        try:
            if remote:  # before minutes of local measurement, not after
                progress.phase(f"checking the dispatcher at {host}:{port}")
                probe(host, port, timeout_s=min(contact_timeout_s, 10.0))
            dataset, the_step, first_batch = _prepare(state, builder, model, step, step_label, builder_kwargs or {},
                                                      batch_size, batched, batch_format, progress, clock_ns,
                                                      watchdog)
            measure = _Measure(state, dataset, the_step, first_batch, rule, processing_mode,
                               contact_timeout_s, progress, interrupts.check, clock_ns, watchdog)
            measure.local()
            if remote:
                state.service_target = service_target
                measure.transfer(service_target, None)
                measure.count(service_target, None, None)
            else:
                _measure_local_service(state, measure, counts, worker_cores, start_timeout_s, progress)
        except KeyboardInterrupt:
            state.interrupted = True
        except Stalled as stall:
            state.stall = str(stall)
            state.notes.insert(0, f"stalled in {stall}; the modes measured before it are kept, the later ones "
                                  "were not run")
        except PipediagError as error:  # a worker killed mid-run (ServiceError), the user's code raising
            if not state.runs:
                raise  # nothing measured yet: the error is the whole answer
            state.failure = error
            state.notes.insert(0, f"failed: {error.message}; the modes measured before it are kept, the later "
                                  "ones were not run")
        finally:
            log = sampler.stop()
    if sampler.error is not None:
        state.notes.append(f"the sampler stopped early: {type(sampler.error).__name__}: {sampler.error}")
    return _conclude(state, log, rule, usable, worker_cores, remote, remote_workers, processing_mode, accelerators,
                     compute_rate, batch_size, batch_format, counts, (clock_ns() - started) / 1e9)


def _prepare(state: _Run, builder, model, step, step_label, builder_kwargs, batch_size, batched, batch_format,
             progress: Progress, clock_ns, watchdog: Watchdog):
    """The dataset (batched, checked to run without Python), its first batch and the step.
    The same building blocks as diagnose(); the py_function check comes before any server starts."""
    from pipediag.backends.tf import tf
    from pipediag.builder.dataset import cardinality, describe, has_batching, require_dataset, take_first_batch
    from pipediag.builder.graph import GraphError, PipelineGraph
    from pipediag.modes.scale import refuse_python
    from pipediag.steps.keras_step import keras_step
    from pipediag.steps.standin import standin_step
    from pipediag.steps.user_step import user_step

    progress.phase("building the dataset")
    kwargs = dict(builder_kwargs)
    took_batch_size = False
    if isinstance(builder, tf.data.Dataset):
        dataset = builder
    else:
        if batch_size is not None and targets.accepts(builder, "batch_size"):
            kwargs["batch_size"] = batch_size
            took_batch_size = True
        dataset = require_dataset(targets.call_user(builder, kwargs, "dataset builder"))
    try:
        graph = PipelineGraph.from_dataset(dataset)
    except GraphError as error:
        # distribute() serializes the same graph: a pipeline that cannot be serialized cannot be sent.
        raise UsageError(
            f"the pipeline cannot be sent to tf.data service workers: {error}",
            "workers rebuild the pipeline from its serialized graph; remove what cannot be serialized "
            "(captured Python objects, unsupported resources)",
        ) from error
    stages = graph.stages()
    if not has_batching(graph) and not batched and not took_batch_size:
        if batch_size is None:
            raise UsageError(
                "the dataset yields single examples, not batches: no batch() in the pipeline",
                "pass --batch-size N (pipediag adds .batch(N)), add .batch(N) to your builder, "
                "or pass --batched if each element already is a batch",
            )
        dataset = dataset.batch(batch_size)
        graph = PipelineGraph.from_dataset(dataset)
        stages = graph.stages()
        state.notes.append(f"the dataset was unbatched: pipediag added .batch({batch_size})")
    state.stages = tuple(stages)
    refuse_python(stages, graph)
    state.cardinality = cardinality(dataset)

    progress.phase("taking the first batch")
    first = watchdog.call(lambda: take_first_batch(dataset, clock_ns), "taking the first batch")
    state.element = describe(dataset.element_spec, first.batch)
    progress.phase("building the step")
    if model is not None:
        the_step = keras_step(model, step_label or "the model", first_batch=first.batch)
    elif step is not None:
        the_step = user_step(step, step_label or "the step", batch_format)
    else:
        the_step = standin_step(first.batch, dataset.element_spec)
    state.step = the_step
    return dataset, the_step, first.batch


def _measure_local_service(state: _Run, measure: _Measure, counts: tuple[int, ...], worker_cores: int,
                           start_timeout_s: float, progress: _Checked) -> None:
    cluster = LocalCluster(worker_cores=worker_cores, start_timeout_s=start_timeout_s)
    try:
        progress.phase("starting the tf.data service dispatcher (a process on 127.0.0.1)")
        cluster.start()
        state.service_target = cluster.target
        for n in counts:
            more = n - len(cluster.workers)
            progress.phase(f"starting {more} more worker process(es): {n} in all")
            cluster.add_workers(more)
            state.servers = cluster.servers
            if "transfer" not in state.runs:
                measure.transfer(cluster.target, cluster)
            measure.count(cluster.target, n, cluster)
    finally:
        progress.phase("stopping the tf.data service processes", check=False)  # nothing may keep stop() from running
        state.servers = cluster.servers
        state.shutdown = cluster.stop()


class _Measure:
    """Runs the modes of a scale measurement, recording into the run's state."""

    def __init__(self, state: _Run, dataset, step: Step, first_batch, rule: StopRule,
                 processing_mode: str, contact_timeout_s: float, progress: Progress, check: Callable[[], None],
                 clock_ns, watchdog: Watchdog):
        self.state, self.dataset, self.step = state, dataset, step
        self.first_batch, self.rule, self.processing_mode = first_batch, rule, processing_mode
        self.contact_timeout_s, self.progress, self.check, self.clock_ns = contact_timeout_s, progress, check, clock_ns
        self.batch_format = step.info.batch_format
        self.watchdog = watchdog

    def _run(self, name: str, label: str, next_batch, with_step: bool, **kw) -> ModeRun:
        self.progress.phase(f"{label} mode")
        result = run_mode(label, next_batch, self.step.run if with_step else None, self.rule,
                          clock_ns=self.clock_ns, progress=self.progress.mode, watchdog=self.watchdog, **kw)
        result = replace(result, name=name)
        if result.stop_reason == "interrupted":
            self.state.runs[name] = result
            raise KeyboardInterrupt
        if result.stop_reason == "stalled":
            self.state.runs[name] = result
            raise self.watchdog.last_stall
        return result

    def local(self) -> None:
        from pipediag.modes.feeds import BatchFeed, constant_feed

        from pipediag.modes.warmup import settling_warmup

        if self.step.strategy is not None:  # every replica's slice held on its device (modes.distributed)
            from pipediag.modes.distributed import distributed_constant

            free = distributed_constant(self.first_batch, self.step.strategy)
        else:
            free = constant_feed(self.first_batch, self.batch_format)
        settled = settling_warmup(self.clock_ns, self.rule.max_seconds)
        self.state.runs["synthetic"] = self._run("synthetic", "synthetic", free, True, first_step_is_compile=True,
                                                 warmup_until=settled)
        if self.state.runs["synthetic"].stop_reason == "out_of_memory":
            raise UsageError("the step ran out of memory with free input at this batch size",
                             "run pipediag diagnose first; a step that does not fit cannot be fed by any service")
        feed = BatchFeed(self.dataset, self.batch_format)
        try:
            self.state.runs["local_input_only"] = self._run("local_input_only", "local input", feed, False)
        finally:
            self._restarts(feed, "local input")
            feed.close()

    def transfer(self, target: str, cluster: LocalCluster | None) -> None:
        """A constant batch through the service: what the service itself costs per batch."""
        from pipediag.backends.tf import tf
        from pipediag.modes.scale import open_feed

        constant = tf.data.Dataset.from_tensors(self.first_batch).repeat()
        cpu = _WorkerCpu(cluster)
        feed = open_feed(constant, target, "parallel_epochs", self.batch_format, self.contact_timeout_s,
                         self.check)
        try:
            self.state.runs["transfer"] = self._run("transfer", "transfer", feed, False)
        finally:
            feed.close()
            _release()
            self.check()
        self.state.transfer_workers = None if cluster is None else len(cluster.workers)
        self.state.transfer_worker_cpu = cpu.read()[0]

    def count(self, target: str, n: int | None, cluster: LocalCluster | None) -> None:
        from pipediag.modes.scale import open_feed

        tag = "remote" if n is None else f"{n}w"
        record: dict[str, Any] = {"workers": n}
        self.state.counts.append(record)
        if cluster is not None:
            cluster.check()
        cpu = _WorkerCpu(cluster)
        feed = open_feed(self.dataset, target, self.processing_mode, self.batch_format, self.contact_timeout_s,
                         self.check)
        try:
            record["input_only"] = self._run(f"{tag}_input_only", f"{tag} input", feed, False)
        finally:
            self._restarts(feed, f"{tag} input")
            feed.close()
            _release()
            self.check()
        record["worker_cpu_pct"], record["worker_cpu_reason"] = cpu.read()
        if cluster is not None:
            cluster.check()
        feed = open_feed(self.dataset, target, self.processing_mode, self.batch_format, self.contact_timeout_s,
                         self.check)
        try:
            record["fed"] = self._run(f"{tag}_fed", f"{tag} step", feed, True)
        finally:
            self._restarts(feed, f"{tag} step")
            feed.close()
            _release()
            self.check()

    def _restarts(self, feed, what: str) -> None:
        if feed.restarts:
            self.state.notes.append(
                f"{what}: the dataset ended and was restarted {feed.restarts} time(s); restart costs are included")


class _WorkerCpu:
    """CPU of each local worker process from now until read(), warm-up included; 100 = one core."""

    def __init__(self, cluster: LocalCluster | None):
        self.procs = [] if cluster is None else [psutil.Process(w.pid) for w in cluster.workers]
        self.remote = cluster is None
        self.start = time.monotonic()
        self.before = [self._seconds(p) for p in self.procs]

    @staticmethod
    def _seconds(proc: psutil.Process) -> float | None:
        try:
            t = proc.cpu_times()
        except psutil.Error:
            return None
        return t.user + t.system

    def read(self) -> tuple[tuple[float, ...] | None, str | None]:
        if self.remote:
            return None, "a remote deployment: its workers are not on this host"
        wall = time.monotonic() - self.start
        after = [self._seconds(p) for p in self.procs]
        if None in after or None in self.before or wall <= 0:
            return None, "a worker process could not be read"
        return tuple(100.0 * (a - b) / wall for a, b in zip(after, self.before)), None


def _release() -> None:
    """Drop the finished iterator now, so its job is released before the next one starts."""
    gc.collect()


def _conclude(state: _Run, log, rule: StopRule, cores: int, worker_cores: int, remote: bool,
              remote_workers: int | None, processing_mode: str, accelerators, compute_rate, batch_size,
              batch_format, counts, elapsed_s: float) -> ScaleResult:
    modes = {name: summarize(run, log) for name, run in state.runs.items()}
    results = []
    for record in state.counts:
        n = record["workers"]
        input_run, fed_run = record.get("input_only"), record.get("fed")
        results.append(CountResult(
            workers=n,
            placement=REMOTE if n is None else placement(n, worker_cores, cores),
            input_only=None if input_run is None else summarize(input_run, log),
            fed=None if fed_run is None else summarize(fed_run, log),
            input_only_run=input_run,
            fed_run=fed_run,
            worker_cpu_pct=record.get("worker_cpu_pct"),
            worker_cpu_reason=record.get("worker_cpu_reason"),
        ))
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
    return ScaleResult(
        status=("interrupted" if state.interrupted else "stalled" if state.stall
                else "failed" if state.failure else "complete"),
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


def _per_device_appetite(state: _Run, synthetic: RateEstimate | None) -> tuple[RateEstimate | None, str]:
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


def _step_on_gpu(state: _Run) -> bool:
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
