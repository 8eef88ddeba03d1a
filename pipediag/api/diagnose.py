"""`diagnose()`: the one-way flow from a dataset builder to a Diagnosis.

    builder ─▶ modes (synthetic · pipeline · input_only · tuned) ─▶ samples
            ─▶ analysis ─▶ verdict ─▶ fixes ─▶ Diagnosis

Library code: it returns an object and prints nothing. Progress goes to an optional callback.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from pipediag.analysis.modes import summarize
from pipediag.api.finish import quick_modes, quick_rule, with_phases
from pipediag.api.gather import DiagnoseRun, Gathering, Plan, observed
from pipediag.api.options import check_step_options, sample_hz, stop_rule_for
from pipediag.errors import UsageError, UserCodeError
from pipediag.fixes.conclude import conclude
from pipediag.modes.watchdog import Watchdog
from pipediag.records.kinds import COMPLETE, FAILED, INTERRUPTED, STALLED, Status
from pipediag.records.options import RunOptions, run_options
from pipediag.records.phases import PhaseClock
from pipediag.records.run import StopRule
from pipediag.records.stall import RunStalled
from pipediag.records.step import EagerUse
from pipediag.results.diagnose import MODE_NAMES, Diagnosis
from pipediag.samples.environment import collect
from pipediag.samples.gpu import GpuReader
from pipediag.samples.sampler import Sampler
from pipediag.samples.selection import GpuSelection
from pipediag.steps.placement import accelerators
from pipediag.steps.step import Step


class Progress(Protocol):
    """What a run is doing, for a display. It may also have `note(text)`: a line said once, in full
    (where a first batch waits, modes.probe); without it, such a line is given to `phase`."""

    def phase(self, text: str) -> None: ...

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None: ...


class SilentProgress:
    """A Progress that shows nothing: the default for library calls."""

    def phase(self, text: str) -> None:
        pass

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None:
        pass


def diagnose(
    builder: Callable[..., Any] | Any,
    *,
    options: RunOptions | None = None,
    modes: tuple[str, ...] = MODE_NAMES,
    stop_rule: StopRule | None = None,
    ram_budget_bytes: int | None = None,
    anatomy: bool = True,
    thorough: bool = False,
    quick: bool = False,
    **run_options_given: Any,
) -> Diagnosis:
    """Diagnose a tf.data pipeline feeding a training step.

    builder: a function returning a batched `tf.data.Dataset` (or the Dataset itself).
    options: the RunOptions every entry point shares (records/options.py), or the same as keyword
    arguments: model, step, step_label, builder_kwargs, batch_size, batched, batch_format,
    max_seconds, sample_hz, stall_timeout_s, gpus, nvml_lib, label, progress, clock_ns.
    model: a compiled Keras model; each step is one `train_on_batch`.
    step: a function `step(batch)` of any framework; pipediag waits for its result.
    Neither: a stand-in model matched to the batch, and the report says so.
    batch_size: passed to the builder if it takes `batch_size`; otherwise, for an unbatched
    dataset, pipediag batches it. Without a visible batch op, batched=True: the elements are
    batches (a generator of batches); False: single examples; None (default): read from their
    shapes, and the notes say so (builder.batch_reading).
    max_seconds: each mode's cap (overrides stop_rule's); stop_rule: when a mode has measured enough.
    anatomy: time the pipeline cut after each stage and name the slow stage (with input_only mode,
    as it measures the input side too).
    thorough: longer windows for the anatomy and the ablation, and all-but-one ablation runs.
    quick: the verdict and the slow stage only: no tuned mode, so no measured fixes (the notes say
    so, and how to get them), and shorter windows (api.finish.quick_rule: each mode at most 3 s
    once it has 10 steps, the anatomy's stages at most 0.5 s each). Diagnosis.phases says where
    the time went, either way.
    stall_timeout_s: a batch or step that takes longer ends the run with status "stalled" (the
    modes measured before are kept); None: a deadline fitted to the slowest batch seen
    (modes.watchdog). The stuck call's thread is left behind: the CLI ends the process.
    gpus: the GPUs to sample, NVML indices or UUIDs ("0,2"); None: those in CUDA_VISIBLE_DEVICES,
    else every GPU (samples.selection).
    """
    opts = run_options(options, "diagnose", **run_options_given)
    check_step_options(opts)
    unknown = [m for m in modes if m not in MODE_NAMES]
    if unknown or "synthetic" not in modes or "pipeline" not in modes:
        raise UsageError(
            f"modes must include synthetic and pipeline, from {', '.join(MODE_NAMES)}; got {', '.join(modes)}",
            "the verdict compares the pipeline with synthetic input",
        )
    modes = quick_modes(modes, quick, thorough)
    rule = stop_rule_for(opts, stop_rule)
    if quick:
        rule = quick_rule(rule)
    plan = Plan(modes=tuple(modes), rule=rule, ram_budget_bytes=ram_budget_bytes, anatomy=anatomy, thorough=thorough,
                quick=quick)
    progress = opts.progress or SilentProgress()
    clock_ns = opts.clock_ns
    started = clock_ns()
    state = DiagnoseRun(target=opts.label_for(builder), phases=PhaseClock(clock_ns))
    sampler = Sampler(gpu_reader=GpuReader(opts.nvml_lib, gpus=GpuSelection.choose(opts.gpus)),
                      hz=sample_hz(opts), clock_ns=clock_ns)

    progress.phase("reading the environment")
    with state.phases.phase("setup"):
        state.environment = collect(nvml_lib=opts.nvml_lib, container=sampler.container)
    sampler.start()
    try:
        Gathering(state, sampler, opts, plan, progress, Watchdog(opts.stall_timeout_s)).run(builder)
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
    with state.phases.phase("conclude"):
        diagnosis = conclude_run(state, log, rule, opts.batch_size, opts.batch_format, 0.0, ram_budget_bytes)
    return with_phases(diagnosis, state.phases, (clock_ns() - started) / 1e9, quick_rule=rule if quick else None)


def _framework(state: DiagnoseRun) -> str | None:
    """The step's framework: seen in its results, or, when it failed before returning any (an
    out-of-memory error on the first step), named by its error."""
    seen = observed(state.step).framework
    if seen not in (None, "host"):
        return seen
    for run in state.runs.values():
        if run.error is not None and run.error.framework in ("jax", "torch", "tensorflow", "keras"):
            return "tensorflow" if run.error.framework == "keras" else run.error.framework
    return seen


def _step_info(step: Step | None, framework: str | None = None, eager: EagerUse | None = None):
    """The step's description with what running it showed: its framework, how it was waited for,
    and whether it ran TensorFlow eagerly."""
    if step is None:
        return None
    seen = observed(step)
    if step.observed is None:
        return replace(step.info, eager=eager)
    return replace(step.info, framework=seen.framework or framework, sync=seen.sync,
                   devices=step.info.devices or seen.devices, eager=eager)


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


def conclude_run(state: DiagnoseRun, log, rule: StopRule, batch_size, batch_format, elapsed_s: float,
                 ram_budget_bytes: int | None = None) -> Diagnosis:
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
        ablation = _ablation(state, summaries)
        step_info = _step_info(state.step, framework, state.eager)
        conclusion = conclude(
            summaries, status_complete=complete, status=_status(state), stages=state.stages, tuning=state.tuning,
            ablation=ablation, candidates=None if state.candidates is None else len(state.candidates),
            handover=state.handover, handover_missing=state.handover_missing, container=log.container,
            gpus_present=bool(state.environment and state.environment.gpus),
            tf_gpu_without_memory_growth=bool(state.environment and state.environment.tf_gpu_without_memory_growth),
            ram_budget_bytes=ram_budget_bytes, step_accelerators=accelerators(step_info.devices) if step_info else (),
            framework=framework, slow_stage=None if state.anatomy is None else state.anatomy.bottleneck_stage,
            step_xla=step_info.xla if step_info else None,
            step_eager=step_info.eager if step_info else None,
        )
        verdict, recommendation = conclusion.verdict, conclusion.recommendation
        notes += list(recommendation.withheld)
    return Diagnosis(
        status=_status(state),
        stall=state.stall,
        error=state.failure,
        target=state.target,
        step=_step_info(state.step, framework, state.eager),
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
        handover_missing=state.handover_missing,
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


def _status(state: DiagnoseRun) -> Status:
    if state.stall is not None:
        return STALLED
    if state.failure is not None:
        return FAILED
    return INTERRUPTED if state.interrupted else COMPLETE


def _ablation(state: DiagnoseRun, summaries: dict):
    """Each planned change's own effect, from the variants that ran (pure bookkeeping)."""
    from pipediag.analysis.ablation import conclude as conclude_ablation

    pipeline = summaries.get("pipeline")
    if state.candidates is None or state.tuning_outcome is None or pipeline is None:
        return None
    outcome = state.tuning_outcome
    return conclude_ablation(pipeline.batches_per_sec, pipeline.batches_per_sec_ci, state.candidates,
                             outcome.variants, outcome.window_s)

