"""How `scale()` measures: the run's state, Ctrl-C kept as a flag, the dataset and step
prepared for tf.data service, and the modes run locally and through the service."""

from __future__ import annotations

import gc
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import psutil

from pipediag.api.diagnose import Progress
from pipediag.builder import target as targets
from pipediag.errors import UsageError
from pipediag.modes.runner import run_mode
from pipediag.modes.watchdog import Watchdog
from pipediag.records.environment import Environment
from pipediag.records.kinds import INTERRUPTED, OUT_OF_MEMORY, STALLED
from pipediag.records.options import RunOptions
from pipediag.records.run import ModeRun, StopRule
from pipediag.records.service import ServerInfo, Shutdown
from pipediag.service.cluster import LocalCluster
from pipediag.steps.step import Step


class Interrupts:
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

    def __enter__(self) -> Interrupts:
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


class Checked:
    """The caller's progress callback, checking for a pending interrupt at every call."""

    def __init__(self, progress: Progress, interrupts: Interrupts):
        self.progress, self.interrupts = progress, interrupts

    def phase(self, text: str, check: bool = True) -> None:
        if check:
            self.interrupts.check()
        self.progress.phase(text)

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None:
        self.interrupts.check()
        self.progress.mode(name, elapsed_s, cap_s, steps)


@dataclass
class ScaleRun:
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



def prepare(state: ScaleRun, builder, options: RunOptions, progress: Progress, watchdog: Watchdog):
    """The dataset (batched, checked to run without Python), its first batch and the step.
    The same building blocks as diagnose(); the py_function check comes before any server starts."""
    model, step, step_label, batch_size = options.model, options.step, options.step_label, options.batch_size
    batched, batch_format, clock_ns = options.batched, options.batch_format, options.clock_ns
    from pipediag.backends.tf import tf
    from pipediag.builder.dataset import cardinality, describe, has_batching, require_dataset, take_first_batch
    from pipediag.builder.graph import GraphError, GraphTooLarge, PipelineGraph
    from pipediag.modes.probe import FirstBatchWatch
    from pipediag.modes.scale import refuse_python
    from pipediag.steps.keras_step import keras_step
    from pipediag.steps.standin import standin_step
    from pipediag.steps.user_step import user_step

    progress.phase("building the dataset")
    kwargs = dict(options.builder_kwargs or {})
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
        hint = ("workers rebuild the pipeline from its serialized graph; remove what cannot be serialized "
                "(captured Python objects, unsupported resources)")
        if isinstance(error, GraphTooLarge):
            hint = ("workers rebuild the pipeline from its serialized graph; keep the array out of it: "
                    "Dataset.save(path) then Dataset.load(path) on the workers, or TFRecord files")
        raise UsageError(f"the pipeline cannot be sent to tf.data service workers: {error}", hint) from error
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
    watch = FirstBatchWatch(PipelineGraph.from_dataset(dataset), dataset.options(), phase=progress.phase,
                            fixed=watchdog.timeout_s is not None)  # says early where the first batch waits
    first = watchdog.call(lambda: take_first_batch(dataset, clock_ns), "taking the first batch", meanwhile=watch)
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


def measure_local_service(state: ScaleRun, measure: Measure, counts: tuple[int, ...], worker_cores: int,
                           start_timeout_s: float, progress: Checked) -> None:
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


class Measure:
    """Runs the modes of a scale measurement, recording into the run's state."""

    def __init__(self, state: ScaleRun, dataset, step: Step, first_batch, rule: StopRule,
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
        if result.stop_reason == INTERRUPTED:
            self.state.runs[name] = result
            raise KeyboardInterrupt
        if result.stop_reason == STALLED:
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
        if self.state.runs["synthetic"].stop_reason == OUT_OF_MEMORY:
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
        cpu = WorkerCpu(cluster)
        feed = open_feed(constant, target, "parallel_epochs", self.batch_format, self.contact_timeout_s,
                         self.check)
        try:
            self.state.runs["transfer"] = self._run("transfer", "transfer", feed, False)
        finally:
            feed.close()
            release()
            self.check()
        self.state.transfer_workers = None if cluster is None else len(cluster.workers)
        self.state.transfer_worker_cpu = cpu.read()[0]

    def count(self, target: str, n: int | None, cluster: LocalCluster | None) -> None:
        tag = "remote" if n is None else f"{n}w"
        record: dict[str, Any] = {"workers": n}
        self.state.counts.append(record)
        if cluster is not None:
            cluster.check()
        cpu = WorkerCpu(cluster)
        self._measure(record, "input_only", target, tag, "input", fed=False)
        record["worker_cpu_pct"], record["worker_cpu_reason"] = cpu.read()
        if cluster is not None:
            cluster.check()
        self._measure(record, "fed", target, tag, "step", fed=True)

    def _measure(self, record: dict[str, Any], key: str, target: str, tag: str, what: str, *, fed: bool) -> None:
        """One timed run through a fresh feed from `target` into record[key] (the input alone, or
        the step fed); the feed is closed and its memory released whatever happens."""
        from pipediag.modes.scale import open_feed

        feed = open_feed(self.dataset, target, self.processing_mode, self.batch_format, self.contact_timeout_s,
                         self.check)
        try:
            record[key] = self._run(f"{tag}_{key}", f"{tag} {what}", feed, fed)
        finally:
            self._restarts(feed, f"{tag} {what}")
            feed.close()
            release()
            self.check()

    def _restarts(self, feed, what: str) -> None:
        if feed.restarts:
            self.state.notes.append(
                f"{what}: the dataset ended and was restarted {feed.restarts} time(s); restart costs are included")


class WorkerCpu:
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


def release() -> None:
    """Drop the finished iterator now, so its job is released before the next one starts."""
    gc.collect()
