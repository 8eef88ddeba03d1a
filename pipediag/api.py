"""`diagnose()`: the one-way flow from a dataset builder to a Diagnosis.

    builder ─▶ modes (synthetic · pipeline · input_only · tuned) ─▶ samples
            ─▶ analysis ─▶ verdict ─▶ fixes ─▶ Diagnosis

Library code: it returns an object and prints nothing. Progress goes to an optional callback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import psutil

from pipediag.analysis.modes import input_side_cpu, summarize
from pipediag.builder import target as targets
from pipediag.diagnosis import MODE_NAMES, Diagnosis
from pipediag.environment import Environment, collect
from pipediag.errors import UsageError
from pipediag.fixes.recommend import recommend
from pipediag.modes.changes import Change
from pipediag.modes.runner import ModeRun, StopRule, run_mode
from pipediag.samples.gpu import GpuReader
from pipediag.samples.sampler import DEFAULT_HZ, Sampler
from pipediag.steps.step import BATCH_FORMATS, Step
from pipediag.verdict.rules import classify_cpu, decide


class Progress(Protocol):
    def phase(self, text: str) -> None: ...

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None: ...


class _Silent:
    def phase(self, text: str) -> None:
        pass

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None:
        pass


@dataclass
class _Run:
    """What a diagnosis has gathered so far: enough to write a partial report on Ctrl-C."""

    target: str
    environment: Environment | None = None
    step: Step | None = None
    element: Any = None
    cardinality: Any = None
    first_batch_ms: float | None = None
    stages: tuple = ()
    tuning: tuple[Change, ...] = ()
    tuned_check: str | None = None
    cache_fill_ms: float | None = None
    interrupted: bool = False

    def __post_init__(self) -> None:
        self.runs: dict[str, ModeRun] = {}
        self.notes: list[str] = []


def diagnose(
    builder: Callable[..., Any] | Any,
    *,
    model: Any | None = None,
    step: Callable[[Any], Any] | None = None,
    builder_kwargs: dict[str, Any] | None = None,
    batch_size: int | None = None,
    batched: bool = False,
    batch_format: str = "tf",
    modes: tuple[str, ...] = MODE_NAMES,
    stop_rule: StopRule | None = None,
    sample_hz: float = DEFAULT_HZ,
    ram_budget_bytes: int | None = None,
    nvml_lib: Any | None = None,
    label: str | None = None,
    step_label: str | None = None,
    progress: Progress | None = None,
    clock_ns: Callable[[], int] = time.monotonic_ns,
    scale_command: str | None = None,
) -> Diagnosis:
    """Diagnose a tf.data pipeline feeding a training step.

    builder: a function returning a batched `tf.data.Dataset` (or the Dataset itself).
    model: a compiled Keras model; each step is one `train_on_batch`.
    step: a function `step(batch)` of any framework; pipediag waits for its result.
    Neither: a stand-in model matched to the batch, and the report says so.
    batch_size: passed to the builder if it takes `batch_size`; otherwise, for an unbatched
    dataset, pipediag batches it. batched=True: elements are already batches (a generator of
    batches) even though no batch op is visible. scale_command: the `pipediag scale` command line
    a tf.data service fix should quote (the CLI passes the user's own target and options).
    """
    if model is not None and step is not None:
        raise UsageError("give a model or a step, not both", "--model for a Keras model, --step for your own step")
    if batch_format not in BATCH_FORMATS:
        raise UsageError(f"unknown batch format {batch_format!r}", f"use one of {', '.join(BATCH_FORMATS)}")
    unknown = [m for m in modes if m not in MODE_NAMES]
    if unknown or "synthetic" not in modes or "pipeline" not in modes:
        raise UsageError(
            f"modes must include synthetic and pipeline, from {', '.join(MODE_NAMES)}; got {', '.join(modes)}",
            "the verdict compares the pipeline with synthetic input",
        )
    rule = stop_rule or StopRule()
    progress = progress or _Silent()
    started = clock_ns()
    label = label or getattr(builder, "__name__", type(builder).__name__)
    state = _Run(target=label)
    sampler = Sampler(gpu_reader=GpuReader(nvml_lib), hz=sample_hz, clock_ns=clock_ns)

    progress.phase("reading the environment")
    state.environment = collect(nvml_lib=nvml_lib)
    sampler.start()
    try:
        _gather(state, sampler, builder, model, step, step_label, builder_kwargs or {}, batch_size, batched,
                batch_format, modes, rule, ram_budget_bytes, progress, clock_ns)
    except KeyboardInterrupt:
        state.interrupted = True
    finally:
        log = sampler.stop()
    if sampler.error is not None:
        state.notes.append(f"the sampler stopped early: {type(sampler.error).__name__}: {sampler.error}")
    return _conclude(state, log, rule, batch_size, batch_format, (clock_ns() - started) / 1e9, scale_command)


def _gather(state: _Run, sampler: Sampler, builder, model, step, step_label, builder_kwargs, batch_size, batched,
            batch_format, modes, rule, ram_budget_bytes, progress: Progress, clock_ns) -> None:
    # TensorFlow is imported only once a diagnosis really starts.
    from pipediag.backends.tf import tf
    from pipediag.builder.dataset import cardinality, describe, has_batching, require_dataset, take_first_batch
    from pipediag.builder.graph import GraphError, PipelineGraph
    from pipediag.modes.feeds import BatchFeed, constant_feed
    from pipediag.modes.tuning import tune
    from pipediag.modes.tuning_rules import TuningFacts
    from pipediag.steps.keras_step import keras_step
    from pipediag.steps.standin import standin_step
    from pipediag.steps.user_step import user_step

    progress.phase("building the dataset")
    kwargs = dict(builder_kwargs)
    builder_took_batch_size = False
    if isinstance(builder, tf.data.Dataset):
        dataset = builder
    else:
        if batch_size is not None and targets.accepts(builder, "batch_size"):
            kwargs["batch_size"] = batch_size
            builder_took_batch_size = True
        dataset = require_dataset(targets.call_user(builder, kwargs, "dataset builder"))

    try:
        graph = PipelineGraph.from_dataset(dataset)
        stages = graph.stages()
        batching_seen = has_batching(graph)
    except GraphError as error:
        graph, stages, batching_seen = None, [], True
        state.notes.append(f"the pipeline's graph could not be read, so no stage names or tuning: {error}")
    if not batching_seen and not batched and not builder_took_batch_size:
        if batch_size is None:
            raise UsageError(
                "the dataset yields single examples, not batches: no batch() in the pipeline",
                "pass --batch-size N (pipediag adds .batch(N)), add .batch(N) to your builder, "
                "or pass --batched if each element already is a batch",
            )
        dataset = dataset.batch(batch_size)
        state.notes.append(f"the dataset was unbatched: pipediag added .batch({batch_size})")
        stages = PipelineGraph.from_dataset(dataset).stages() if graph is not None else []
    state.stages = tuple(stages)

    n = cardinality(dataset)
    state.cardinality = n
    if isinstance(n, int) and n < rule.warmup_steps + rule.min_steps:
        state.notes.append(
            f"the dataset has only {n} batches, fewer than warm-up plus measurement "
            f"({rule.warmup_steps + rule.min_steps}): pipediag repeats it, restarting it like an epoch loop"
        )

    progress.phase("taking the first batch")
    first = take_first_batch(dataset, clock_ns)
    state.first_batch_ms = first.elapsed_ns / 1e6
    state.element = describe(dataset.element_spec, first.batch)

    progress.phase("building the step")
    if model is not None:
        the_step = keras_step(model, step_label or "the model")
    elif step is not None:
        the_step = user_step(step, step_label or "the step", batch_format)
    else:
        the_step = standin_step(first.batch)
    state.step = the_step

    feeds: dict[str, BatchFeed] = {}

    def run(name: str, next_batch, with_step: bool, **kw) -> ModeRun:
        progress.phase(f"{name} mode")
        result = run_mode(
            name, next_batch, the_step.run if with_step else None, rule,
            clock_ns=clock_ns, progress=progress.mode, **kw,
        )
        state.runs[name] = result
        if result.stop_reason == "interrupted":
            raise KeyboardInterrupt
        return result

    synthetic = run("synthetic", constant_feed(first.batch, the_step.info.batch_format), True, first_step_is_compile=True)
    oom = synthetic.stop_reason == "out_of_memory"
    if oom:
        state.notes.append("the step ran out of memory with free input: pipeline and tuned modes were skipped")
    if not oom:
        feeds["pipeline"] = BatchFeed(dataset, the_step.info.batch_format)
        run("pipeline", feeds["pipeline"], True)
    if "input_only" in modes:
        feeds["input_only"] = BatchFeed(dataset, the_step.info.batch_format)
        run("input_only", feeds["input_only"], False)
    if "tuned" in modes and not oom and graph is not None:
        progress.phase("tuning the pipeline")
        log = sampler.log()
        measured = summarize(state.runs["pipeline"], log)
        input_side = summarize(state.runs["input_only"], log) if "input_only" in state.runs else measured
        side = input_side_cpu(measured, input_side if "input_only" in state.runs else None)
        facts = TuningFacts(
            cores=psutil.cpu_count() or 1,
            ram_budget_bytes=ram_budget_bytes or int(psutil.virtual_memory().available * 0.5),
            fill_budget_seconds=rule.max_seconds,
            latency_bound=side is not None and classify_cpu(side).kind == "idle",
            map_parallelization_on=dataset.options().experimental_optimization.map_parallelization is not False,
        )
        tuned = tune(dataset, facts, input_batches_per_sec=input_side.batches_per_sec, clock_ns=clock_ns)
        state.tuning = tuple(tuned.changes)
        state.notes.extend(tuned.notes)
        state.cache_fill_ms = None if tuned.cache_fill_ns is None else tuned.cache_fill_ns / 1e6
        feeds["tuned"] = BatchFeed(tuned.dataset, the_step.info.batch_format)
        run("tuned", feeds["tuned"], True)
        state.tuned_check = _check_tuned(feeds["tuned"].first, first.batch, random=any(s.is_random for s in stages))
    for name, feed in feeds.items():
        if feed.restarts:
            state.notes.append(
                f"{name} mode: the dataset ended and was restarted {feed.restarts} time(s); restart costs are included"
            )
        feed.close()


def _check_tuned(tuned_first, original_first, random: bool) -> str | None:
    """Does the tuned pipeline produce what the user's does? Values for a deterministic
    pipeline, structure for a random one (its values differ from run to run anyway)."""
    if tuned_first is None:
        return None
    from pipediag.modes.feeds import same_batch, same_structure

    if random:
        if same_structure(tuned_first, original_first):
            return "the pipeline is random: checked that the tuned pipeline's first batch has the same structure"
        return "the tuned pipeline's first batch has a DIFFERENT structure from the original's"
    if same_batch(tuned_first, original_first):
        return "checked: the tuned pipeline's first batch equals the original's"
    return "the tuned pipeline's first batch DIFFERS from the original's (its element order changed)"


def _conclude(state: _Run, log, rule: StopRule, batch_size, batch_format, elapsed_s: float,
              scale_command: str | None = None) -> Diagnosis:
    summaries = {name: summarize(run, log) for name, run in state.runs.items()}
    complete = not state.interrupted
    verdict = recommendation = None
    if "synthetic" in summaries:
        verdict = decide(summaries, gpu_expected=bool(state.environment and state.environment.gpus))
        if not complete:
            verdict = replace(
                verdict,
                confidence="low",
                evidence=verdict.evidence + ("the run was interrupted: this verdict uses only the modes that finished",),
            )
        recommendation = recommend(
            verdict, summaries, list(state.tuning),
            gpu_present=bool(state.environment and state.environment.gpus),
            tf_gpu_without_memory_growth=bool(state.environment and state.environment.tf_gpu_without_memory_growth),
            stages=state.stages, scale_command=scale_command,
        )
    return Diagnosis(
        status="complete" if complete else "interrupted",
        target=state.target,
        step=state.step.info if state.step else None,
        environment=state.environment,
        element=state.element,
        cardinality=state.cardinality,
        first_batch_ms=state.first_batch_ms,
        stages=state.stages,
        runs=dict(state.runs),
        modes=summaries,
        tuning=state.tuning,
        tuned_check=state.tuned_check,
        cache_fill_ms=state.cache_fill_ms,
        verdict=verdict,
        fixes=recommendation.fixes if recommendation else (),
        tried=recommendation.tried if recommendation else (),
        samples=log,
        settings={
            "batch_size": batch_size,
            "batch_format": batch_format,
            "max_seconds_per_mode": rule.max_seconds,
            "rel_half_width": rule.rel_half_width,
            "sample_interval_s": log.interval_s,
        },
        notes=tuple(state.notes),
        elapsed_s=elapsed_s,
    )
