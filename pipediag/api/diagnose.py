"""`diagnose()`: the one-way flow from a dataset builder to a Diagnosis.

    builder ─▶ modes (synthetic · pipeline · input_only · tuned) ─▶ samples
            ─▶ analysis ─▶ verdict ─▶ fixes ─▶ Diagnosis

Library code: it returns an object and prints nothing. Progress goes to an optional callback.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from pipediag import stats
from pipediag.analysis.buffers import shuffle_buffers
from pipediag.analysis.modes import input_side_cpu, summarize
from pipediag.results.diagnose import MODE_NAMES, Diagnosis
from pipediag.records.environment import Environment
from pipediag.samples.environment import collect
from pipediag.errors import UsageError, UserCodeError
from pipediag.fixes.recommend import recommend
from pipediag.records.change import Change
from pipediag.records.run import ModeRun, StopRule
from pipediag.modes.runner import longer, run_mode
from pipediag.records.stall import RunStalled, StallInfo, Stalled
from pipediag.modes.watchdog import Watchdog
from pipediag.samples.gpu import GpuReader
from pipediag.samples.selection import GpuSelection
from pipediag.samples.sampler import DEFAULT_HZ, Sampler
from pipediag.steps.placement import accelerators
from pipediag.steps.step import BATCH_FORMATS, Observed, Step
from pipediag.verdict.devices import with_device_lines
from pipediag.verdict.edges import Edge, straddling
from pipediag.verdict.rules import classify_cpu, decide, nothing_left_to_change


class Progress(Protocol):
    def phase(self, text: str) -> None: ...

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None: ...


class SilentProgress:
    """A Progress that shows nothing: the default for library calls."""

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
    anatomy: Any = None  # analysis.waterfall.Anatomy
    candidates: list | None = None  # (key, kind, stage) of the changes the tuned mode planned
    tuning_outcome: Any = None  # modes.ablation.TuningOutcome, filled in as the variants run
    handover: Any = None  # analysis.handover.Handover: one already-produced batch handed to the step
    stall: StallInfo | None = None  # where the run stalled, if it did
    failure: UserCodeError | None = None  # the user's code raised after some modes were measured
    running: str | None = None  # the mode (or phase) running now, to say where a failure happened

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
    anatomy: bool = True,
    thorough: bool = False,
    nvml_lib: Any | None = None,
    label: str | None = None,
    step_label: str | None = None,
    progress: Progress | None = None,
    clock_ns: Callable[[], int] = time.monotonic_ns,
    scale_command: str | None = None,
    stall_timeout_s: float | None = None,
    gpus: str | Sequence[int | str] | None = None,
) -> Diagnosis:
    """Diagnose a tf.data pipeline feeding a training step.

    builder: a function returning a batched `tf.data.Dataset` (or the Dataset itself).
    model: a compiled Keras model; each step is one `train_on_batch`.
    step: a function `step(batch)` of any framework; pipediag waits for its result.
    Neither: a stand-in model matched to the batch, and the report says so.
    batch_size: passed to the builder if it takes `batch_size`; otherwise, for an unbatched
    dataset, pipediag batches it. batched=True: elements are already batches (a generator of
    batches) even though no batch op is visible.
    anatomy: time the pipeline cut after each stage and name the slow stage (with input_only mode,
    as it measures the input side too).
    thorough: longer windows for the anatomy and the ablation, and all-but-one ablation runs.
    scale_command: the `pipediag scale` command line a tf.data service fix should quote (the CLI
    passes the user's own target and options).
    stall_timeout_s: a batch or step that takes longer ends the run with status "stalled" (the
    modes measured before are kept); None: a deadline fitted to the slowest batch seen
    (modes.watchdog). The stuck call's thread is left behind: the CLI ends the process.
    gpus: the GPUs to sample, NVML indices or UUIDs ("0,2"); None: those in CUDA_VISIBLE_DEVICES,
    else every GPU (samples.selection).
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
    progress = progress or SilentProgress()
    started = clock_ns()
    label = label or getattr(builder, "__name__", type(builder).__name__)
    state = _Run(target=label)
    sampler = Sampler(gpu_reader=GpuReader(nvml_lib, gpus=GpuSelection.choose(gpus)), hz=sample_hz,
                      clock_ns=clock_ns)

    progress.phase("reading the environment")
    state.environment = collect(nvml_lib=nvml_lib, container=sampler.container)
    sampler.start()
    watchdog = Watchdog(stall_timeout_s)
    try:
        _gather(state, sampler, builder, model, step, step_label, builder_kwargs or {}, batch_size, batched,
                batch_format, modes, rule, ram_budget_bytes, anatomy, thorough, progress, clock_ns, watchdog)
    except KeyboardInterrupt:
        state.interrupted = True
    except RunStalled as stalled:
        state.stall = stalled.info
    except UserCodeError as error:
        if not state.runs:
            raise  # nothing measured yet: the error is the whole answer
        state.failure = error
        state.notes.insert(0, f"{state.running or 'the run'} failed: {error.message}; the modes measured before "
                              "it are kept, the later ones were not run")
    finally:
        log = sampler.stop()
    if sampler.error is not None:
        state.notes.append(f"the sampler stopped early: {type(sampler.error).__name__}: {sampler.error}")
    return _conclude(state, log, rule, batch_size, batch_format, (clock_ns() - started) / 1e9, scale_command,
                     ram_budget_bytes)


def _gather(state: _Run, sampler: Sampler, builder, model, step, step_label, builder_kwargs, batch_size, batched,
            batch_format, modes, rule, ram_budget_bytes, anatomy, thorough, progress: Progress, clock_ns,
            watchdog: Watchdog) -> None:
    # TensorFlow is imported only once a diagnosis really starts.
    from pipediag.builder.graph import GraphError, PipelineGraph
    from pipediag.builder.prepare import prepare_dataset
    from pipediag.tuner.ablation import Reference, TuningOutcome, tune_with_ablation
    from pipediag.tuner.checks import is_deterministic
    from pipediag.modes.feeds import BatchFeed, constant_feed
    from pipediag.tuner.rewrite import facts_for, plan_tuning
    from pipediag.modes.warmup import settling_warmup
    from pipediag.modes.waterfall import THOROUGH, WaterfallRule, locate_stall, measure_anatomy
    from pipediag.steps.device_memory import DeviceMemory
    from pipediag.steps.make import make_step

    def stalled(mode: str, stall: Stalled, steps: int = 0, reads_pipeline: bool = True) -> RunStalled:
        """The run ends here; for a mode reading the user's pipeline, find the stage that stalls."""
        stage = why = None  # a step that did not return: no stage of the pipeline to name
        if reads_pipeline and not stall.in_step:
            stage, why = None, "the pipeline's graph could not be read"
            if graph is not None:
                progress.phase("finding the stage that stalls")
                stage, why = locate_stall(graph, dataset.options(), watchdog, stall.timeout_s)
        return RunStalled(StallInfo(mode=mode, what=stall.what, waited_s=round(stall.waited_s, 3),
                                    timeout_s=stall.timeout_s, steps=steps, stage=stage, stage_reason=why))

    graph = dataset = None
    try:
        prepared = prepare_dataset(builder, builder_kwargs, batch_size, batched, rule.warmup_steps + rule.min_steps,
                                   clock_ns=clock_ns, phase=progress.phase, guard=watchdog.call)
    except Stalled as stall:  # the first batch never came
        graph, dataset = getattr(stall, "graph", None), getattr(stall, "dataset", None)
        raise stalled("first batch", stall) from None
    dataset, graph, stages = prepared.dataset, prepared.graph, prepared.stages
    state.notes.extend(prepared.notes)
    state.stages = stages
    state.cardinality = prepared.cardinality
    state.first_batch_ms = prepared.first_batch_ns / 1e6
    state.element = prepared.element
    first_batch = prepared.first_batch

    progress.phase("building the step")
    the_step = make_step(model, step, step_label, batch_format, first_batch, dataset.element_spec)
    state.step = the_step

    memory = DeviceMemory(lambda: _observed(the_step).framework)
    feeds: dict[str, BatchFeed] = {}  # kept after their modes for their first batches

    def step_feed(data) -> BatchFeed:
        """The batches of `data` as the step takes them: per replica under a tf.distribute strategy."""
        if the_step.strategy is not None:
            from pipediag.modes.distributed import DistributedFeed

            return DistributedFeed(data, the_step.strategy)
        return BatchFeed(data, the_step.info.batch_format)

    def free_input():
        """Synthetic mode's one batch, handed out forever (on every replica's device under a strategy)."""
        if the_step.strategy is not None:
            from pipediag.modes.distributed import distributed_constant

            return distributed_constant(first_batch, the_step.strategy)
        return constant_feed(first_batch, the_step.info.batch_format)

    def run(name: str, next_batch, with_step: bool, mode_rule: StopRule | None = None, record: bool = True,
            **kw) -> ModeRun:
        progress.phase(f"{name} mode")
        state.running = f"{name} mode"
        if with_step:
            memory.start()
        # A JAX or PyTorch step runs with one step in flight while the next batch is fetched, as
        # a training loop runs it; the wait is then the part of each fetch the device did not hide.
        dispatch = the_step.dispatch if with_step else None
        step_fn = the_step.run if with_step and dispatch is None else None
        try:
            result = run_mode(
                name, next_batch, step_fn, mode_rule or rule, clock_ns=clock_ns, progress=progress.mode,
                dispatch=dispatch, hideable_ns=hideable.get("ns") if dispatch else None, watchdog=watchdog, **kw,
            )
        finally:
            if isinstance(next_batch, BatchFeed):
                # Free the iterator now: its prefetch threads and buffers (a big shuffle buffer)
                # must not linger into the next mode's measurement. Its first batches stay.
                next_batch.close()
                if next_batch.restarts and record:
                    state.notes.append(
                        f"{name} mode: the dataset ended and was restarted {next_batch.restarts} time(s); "
                        "restart costs are included"
                    )
        if with_step:
            result = replace(result, device_memory=memory.stop())
        if record:
            state.runs[name] = result
        if result.stop_reason == "interrupted":
            raise KeyboardInterrupt
        if result.stop_reason == "stalled":
            reads_pipeline = name in ("pipeline", "input_only")  # a variant's graph is not the user's
            raise stalled(name, watchdog.last_stall, steps=result.steps, reads_pipeline=reads_pipeline)
        return result

    hideable: dict[str, int | None] = {}  # the device work a fetch can hide behind, from synthetic mode
    settled = settling_warmup(clock_ns, rule.max_seconds)
    synthetic = run("synthetic", free_input(), True, first_step_is_compile=True, warmup_until=settled)
    warmup_note = settled.note()
    if warmup_note:
        state.notes.append(warmup_note)
    if synthetic.block_ns:
        hideable["ns"] = int(stats.median(synthetic.block_ns))
    oom = synthetic.stop_reason == "out_of_memory"
    if oom:
        state.notes.append("the step ran out of memory with free input: pipeline and tuned modes were skipped")
    if not oom:
        feeds["pipeline"] = step_feed(dataset)
        run("pipeline", feeds["pipeline"], True)
    if "input_only" in modes:
        feeds["input_only"] = BatchFeed(dataset, the_step.info.batch_format)
        run("input_only", feeds["input_only"], False)
    if not oom and state.runs["synthetic"].steps:
        _measure_handover(state, first_batch, the_step, rule, progress, clock_ns)
    if anatomy and graph is not None and "input_only" in modes:
        progress.phase("timing the pipeline after each stage (anatomy)")
        state.running = "the anatomy"
        try:
            result = measure_anatomy(
                PipelineGraph.from_dataset(dataset), dataset.options(), batch_size=state.element.batch_size,
                rule=THOROUGH if thorough else WaterfallRule(), first_batch_s=prepared.first_batch_ns / 1e9,
                clock_ns=clock_ns, watchdog=watchdog,
            )
            state.stages, state.anatomy = tuple(result.stages), result.anatomy
        except GraphError as error:
            state.notes.append(f"no anatomy: {error}")
        except Stalled as stall:
            raise stalled("anatomy", stall) from None
    edges = [] if oom else _edges_on_the_line(state, sampler.log())
    if edges:
        # A verdict reading sat within its run-to-run spread of its threshold: measure the two
        # modes it compares again, back to back and longer, rather than decide on a coin toss.
        longer_rule = longer(rule)
        run("synthetic", free_input(), True, mode_rule=longer_rule)
        feeds["pipeline"] = step_feed(dataset)
        run("pipeline", feeds["pipeline"], True, mode_rule=longer_rule)
        state.notes.append(
            "a verdict reading sat within its spread of its threshold ("
            + "; ".join(Edge(**{k: v for k, v in e.items() if k != "straddles"}).text() for e in edges)
            + f"): synthetic and pipeline modes were measured again, back to back, over {longer_rule.max_seconds:.0f} s "
            "each, and the verdict uses those runs"
        )
    if "tuned" in modes and not oom and graph is not None:
        progress.phase("tuning the pipeline")
        state.running = "tuning"
        log = sampler.log()
        measured = summarize(state.runs["pipeline"], log)
        input_side = summarize(state.runs["input_only"], log) if "input_only" in state.runs else measured
        side = input_side_cpu(measured, input_side if "input_only" in state.runs else None)
        facts = facts_for(dataset, ram_budget_bytes=ram_budget_bytes, fill_budget_seconds=rule.max_seconds,
                          latency_bound=side is not None and classify_cpu(side).kind == "idle",
                          container=sampler.container)
        plan = plan_tuning(dataset, facts, input_batches_per_sec=input_side.batches_per_sec, clock_ns=clock_ns)
        state.candidates = [(c.key, c.kind, c.stage) for c in plan.candidates]
        state.tuning = tuple(plan.changes)
        deterministic, why_random = is_deterministic(
            any(s.is_random for s in stages), feeds["pipeline"].firsts,
            feeds["input_only"].firsts if "input_only" in feeds else None,
        )
        reference = Reference(feeds["pipeline"].firsts or [first_batch], deterministic, why_random)

        def run_variant(name: str, variant, variant_rule: StopRule):
            feed = step_feed(variant)
            result = run(name, feed, True, mode_rule=variant_rule, record=name == "tuned")  # closes the feed
            return result, feed.firsts

        state.tuning_outcome = TuningOutcome(changes=list(plan.changes))
        try:
            outcome = tune_with_ablation(
                plan, baseline=measured, reference=reference, run_variant=run_variant,
                summarize=lambda r: summarize(r, sampler.log()), rule=rule, thorough=thorough,
                outcome=state.tuning_outcome, clock_ns=clock_ns, guard=watchdog.call,
            )
        except Stalled as stall:  # filling a variant's cache (a stall in a variant's mode is a RunStalled)
            raise stalled("tuned", stall, reads_pipeline=False) from None
        state.tuning = tuple(outcome.changes)
        state.notes.extend(outcome.notes)
        state.cache_fill_ms = None if outcome.cache_fill_ns is None else outcome.cache_fill_ns / 1e6
        state.tuned_check = None if outcome.tuned_check is None else outcome.tuned_check.text


def _measure_handover(state: _Run, first_batch, the_step: Step, rule: StopRule, progress: Progress, clock_ns) -> None:
    """Time the hand-over of an already-produced batch (modes/handover.py); a failure is a note."""
    from pipediag.errors import UserCodeError
    from pipediag.modes.handover import measure_handover

    progress.phase("timing the hand-over of a ready batch")
    try:
        state.handover = measure_handover(first_batch, the_step.info.batch_format, _observed(the_step).framework,
                                          rule, clock_ns=clock_ns)
    except UserCodeError as error:
        state.notes.append(f"the hand-over of a ready batch could not be timed: {error}")


def _observed(step: Step | None) -> Observed:
    if step is None or step.observed is None:
        kind = None if step is None else {"keras": "tensorflow", "standin": "tensorflow"}.get(step.info.kind)
        return Observed(kind, None)
    return step.observed()


def _framework(state: _Run) -> str | None:
    """The step's framework: seen in its results, or, when it failed before returning any (an
    out-of-memory error on the first step), named by its error."""
    seen = _observed(state.step).framework
    if seen not in (None, "host"):
        return seen
    for run in state.runs.values():
        if run.error is not None and run.error.framework in ("jax", "torch", "tensorflow", "keras"):
            return "tensorflow" if run.error.framework == "keras" else run.error.framework
    return seen


def _step_info(step: Step | None, framework: str | None = None):
    """The step's description with what running it showed: its framework and how it was waited for."""
    if step is None:
        return None
    seen = _observed(step)
    if step.observed is None:
        return step.info
    return replace(step.info, framework=seen.framework or framework, sync=seen.sync,
                   devices=step.info.devices or seen.devices)


def _framework_notes(framework: str | None, summaries: dict) -> list[str]:
    notes = []
    synthetic = summaries.get("synthetic")
    preallocates = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true").lower() not in ("false", "0")
    if framework == "jax" and preallocates and synthetic is not None and synthetic.gpu_memory_used_max_bytes:
        share = os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION", ".75")
        notes.append(
            f"JAX reserves a share ({share}) of GPU memory when it starts (XLA_PYTHON_CLIENT_PREALLOCATE): NVML's "
            "device memory shows that reservation; the step's peak memory comes from JAX's own memory_stats()"
        )
    return notes


def _conclude(state: _Run, log, rule: StopRule, batch_size, batch_format, elapsed_s: float,
              scale_command: str | None = None, ram_budget_bytes: int | None = None) -> Diagnosis:
    summaries = {name: summarize(run, log) for name, run in state.runs.items()}
    complete = not state.interrupted and state.stall is None and state.failure is None
    if state.stall is not None:
        notes_stall = [state.stall.text + "; the modes measured before it are kept, the later ones were not run"]
    else:
        notes_stall = []
    framework = _framework(state)
    environment = None if state.environment is None else state.environment.for_step(framework)
    notes = notes_stall + list(state.notes) + _framework_notes(framework, summaries)
    watch = getattr(state.step, "loss_watch", None)
    loss_note = watch.note(standin=state.step.info.kind == "standin") if watch is not None else None
    notes += [loss_note] if loss_note else []
    verdict = recommendation = ablation = None
    if "synthetic" in summaries:
        verdict = decide(summaries, gpu_expected=bool(state.environment and state.environment.gpus),
                         buffers=shuffle_buffers(state.stages), ram_budget_bytes=ram_budget_bytes,
                         handover=state.handover, container=log.container)
        if not complete:
            verdict = replace(
                verdict,
                confidence="low",
                evidence=verdict.evidence + (
                    f"the run {_ended(state)}: this verdict uses only the modes that finished",),
            )
        verdict = nothing_left_to_change(
            verdict, [(c.kind, c.stage, c.reason) for c in state.tuning if not c.applied],
            None if state.candidates is None else len(state.candidates))
        step_info = _step_info(state.step, framework)
        verdict = with_device_lines(verdict, summaries, accelerators(step_info.devices) if step_info else ())
        ablation = _ablation(state, summaries)
        recommendation = recommend(
            verdict, summaries, list(state.tuning), ablation=ablation,
            gpu_present=bool(state.environment and state.environment.gpus),
            tf_gpu_without_memory_growth=bool(state.environment and state.environment.tf_gpu_without_memory_growth),
            framework=framework,
            stages=state.stages, scale_command=scale_command,
            slow_stage=None if state.anatomy is None else state.anatomy.bottleneck_stage,
            container=log.container,
        )
        notes += list(recommendation.withheld)
    return Diagnosis(
        status=_status(state),
        stall=state.stall,
        error=state.failure,
        target=state.target,
        step=_step_info(state.step, framework),
        environment=environment,
        element=state.element,
        cardinality=state.cardinality,
        first_batch_ms=state.first_batch_ms,
        stages=state.stages,
        runs=dict(state.runs),
        modes=summaries,
        tuning=state.tuning,
        tuned_check=state.tuned_check,
        cache_fill_ms=state.cache_fill_ms,
        anatomy=state.anatomy,
        ablation=ablation,
        handover=state.handover,
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
        notes=tuple(notes),
        elapsed_s=elapsed_s,
    )


def _status(state: _Run) -> str:
    if state.stall is not None:
        return "stalled"
    if state.failure is not None:
        return "failed"
    return "interrupted" if state.interrupted else "complete"


def _ended(state: _Run) -> str:
    return {"stalled": "stalled", "failed": "failed", "interrupted": "was interrupted"}.get(_status(state), "ended")


def _ablation(state: _Run, summaries: dict):
    """Each planned change's own effect, from the variants that ran (pure bookkeeping)."""
    from pipediag.analysis.ablation import conclude

    pipeline = summaries.get("pipeline")
    if state.candidates is None or state.tuning_outcome is None or pipeline is None:
        return None
    outcome = state.tuning_outcome
    return conclude(pipeline.batches_per_sec, pipeline.batches_per_sec_ci, state.candidates, outcome.variants,
                    outcome.window_s)


def _edges_on_the_line(state: _Run, log) -> list[dict]:
    """The verdict's readings that straddle their threshold, judged on the modes run so far."""
    if "synthetic" not in state.runs or "pipeline" not in state.runs:
        return []
    summaries = {name: summarize(run, log) for name, run in state.runs.items()}
    return straddling(decide(summaries, container=log.container).facts)
