"""`compare()`: is pipeline B faster than pipeline A, feeding the same step? With a verdict that
can be trusted: interleaved rounds, a 95% interval, early stop only when the answer is clear.

    builders A, B ─▶ datasets ─▶ one step ─▶ interleaved rounds (fed step · input only)
                 ─▶ intervals (analysis.comparison) ─▶ verdicts ─▶ Comparison

A may also be a saved `diagnose --json` run (`baseline=`): B is then measured alone and compared
with the saved timings. Library code: it returns an object and prints nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from pipediag.analysis.compare import RatioInterval
from pipediag.analysis.usage import Usage, usage
from pipediag.api.options import check_step_options, sample_hz
from pipediag.errors import UsageError
from pipediag.modes.compare import FED, INPUT_ONLY, ComparePlan, Rounds, Side, run_rounds
from pipediag.modes.watchdog import Watchdog
from pipediag.records.kinds import COMPLETE, FAILED, INTERRUPTED, OUT_OF_MEMORY, STALLED
from pipediag.records.options import RunOptions, run_options
from pipediag.records.readings import SampleLog
from pipediag.results.compare import Comparison, SideInfo, SideNumbers
from pipediag.results.diagnose import Diagnosis, read_json
from pipediag.samples.environment import collect
from pipediag.samples.gpu import GpuReader
from pipediag.samples.sampler import Sampler
from pipediag.verdict.compare import DEFAULT_EQUIVALENCE, is_clear, judge


class CompareProgress(Protocol):
    def phase(self, text: str) -> None: ...

    def round(self, done: int, elapsed_s: float, cap_s: float, interval: RatioInterval | None) -> None: ...


class _Silent:
    def phase(self, text: str) -> None:
        pass

    def round(self, done: int, elapsed_s: float, cap_s: float, interval: RatioInterval | None) -> None:
        pass


def _label(builder: Any, given: str | None, kwargs: dict[str, Any]) -> str:
    name = given or getattr(builder, "__name__", type(builder).__name__)
    if kwargs and not given:
        name += " " + " ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return name


def compare(
    a: Callable[..., Any] | Any | None = None,
    b: Callable[..., Any] | Any | None = None,
    *,
    options: RunOptions | None = None,
    baseline: Diagnosis | str | None = None,
    a_kwargs: dict[str, Any] | None = None,
    b_kwargs: dict[str, Any] | None = None,
    plan: ComparePlan | None = None,
    equivalence: float = DEFAULT_EQUIVALENCE,
    fail_if_slower: float | None = None,
    label_a: str | None = None,
    label_b: str | None = None,
    **run_options_given: Any,
) -> Comparison:
    """Compare pipeline B (the change) with pipeline A (the baseline), feeding the same step.

    a, b: dataset builders (or Datasets); the same builder twice with different `a_kwargs` and
    `b_kwargs` compares two settings of it. `baseline`: a saved diagnosis (or its JSON path)
    instead of `a`. options: the RunOptions every entry point shares, or the same as keyword
    arguments (as for `diagnose`; not builder_kwargs, label or gpus: A and B have their own, and
    compare samples every GPU); max_seconds caps the whole comparison (overrides the plan's).
    model/step: as in `diagnose`; neither gives a stand-in model built for A's batch. Every ratio is
    B's throughput over A's. `fail_if_slower=0.05` marks a regression when
    B is slower than A by more than 5% with confidence (`Comparison.regression`).
    `stall_timeout_s`: as in `diagnose`; a turn that stalls ends the comparison with status
    "stalled" and the rounds before it (a first batch that never comes raises `Stalled`). The
    user's code raising in a round ends it with status "failed", the rounds before it, and the
    error in `Comparison.error`; raising before the first round raises it (nothing to compare).
    """
    opts = run_options(options, "compare", unsupported=("builder_kwargs", "label", "gpus"), **run_options_given)
    model, step, batch_size, batched, batch_format = opts.model, opts.step, opts.batch_size, opts.batched, opts.batch_format
    nvml_lib, step_label, clock_ns = opts.nvml_lib, opts.step_label, opts.clock_ns
    if b is None:
        raise UsageError("nothing to compare: B (the changed pipeline) is missing", "pipediag compare A B, "
                         "or pipediag compare --baseline run.json B")
    if (a is None) == (baseline is None):
        raise UsageError("compare B with either a pipeline A or a saved baseline, not both",
                         "pipediag compare A B, or pipediag compare --baseline run.json B")
    check_step_options(opts)
    if not 0 < equivalence < 1:
        raise UsageError(f"equivalence must be a fraction between 0 and 1, got {equivalence}", "e.g. 0.05 for ±5%")
    if fail_if_slower is not None and not 0 <= fail_if_slower < 1:
        raise UsageError(f"fail_if_slower must be a fraction between 0 and 1, got {fail_if_slower}", "e.g. 0.05 for 5%")
    plan = plan or ComparePlan()
    if opts.max_seconds is not None:
        plan = replace(plan, max_seconds=opts.max_seconds)
    progress = opts.progress or _Silent()
    saved_file = None
    if isinstance(baseline, str):
        saved_file, baseline = baseline, read_json(baseline)
    notes: list[str] = []
    if baseline is not None:
        plan = _plan_for_baseline(baseline, plan, notes)

    started = clock_ns()
    progress.phase("reading the environment")
    environment = collect(nvml_lib=nvml_lib)
    sampler = Sampler(gpu_reader=GpuReader(nvml_lib), hz=sample_hz(opts), clock_ns=clock_ns)
    sampler.start()
    try:
        measured = _measure(a, b, baseline, model, step, a_kwargs or {}, b_kwargs or {}, batch_size, batched,
                            batch_format, plan, equivalence, fail_if_slower, label_a, label_b, step_label, saved_file,
                            progress, clock_ns, notes, Watchdog(opts.stall_timeout_s))
    finally:
        log = sampler.stop()
    if sampler.error is not None:
        notes.append(f"the sampler stopped early: {type(sampler.error).__name__}: {sampler.error}")
    side_a, side_b, step_info, rounds = measured
    return conclude(side_a, side_b, step_info, rounds, baseline, environment, plan, equivalence, fail_if_slower,
                     log, notes, (clock_ns() - started) / 1e9, batch_size, batch_format)


def _step_spec(prepared: dict, own_step: bool):
    """The element spec the step is built for: one that A's and B's batches both fit. When none
    can and pipediag builds or calls the step (a stand-in, --model), that is a UsageError now, not
    a failed step in B's first turn; a --step of the user's may take both."""
    from pipediag.builder.dataset import common_spec

    specs = [p.dataset.element_spec for p in prepared.values()]
    if len(specs) == 1:
        return specs[0]
    spec = common_spec(*specs)
    if spec is None and not own_step:
        raise UsageError(
            f"A and B yield batches of different structure or dtypes, which one model cannot train on "
            f"(A: {prepared['A'].element.structure}; B: {prepared['B'].element.structure})",
            "compare pipelines that yield the same keys and dtypes (a builder must return the same "
            "structure for --arg-a and --arg-b), or pass --step with a step that takes both",
        )
    return spec if spec is not None else specs[0]


def _plan_for_baseline(saved: Diagnosis, plan: ComparePlan, notes: list[str]) -> ComparePlan:
    wanted = {FED: "pipeline", INPUT_ONLY: "input_only"}
    usable = [k for k in plan.kinds if saved.runs.get(wanted[k]) is not None and saved.runs[wanted[k]].steps >= 4]
    if FED not in usable and FED in plan.kinds:
        raise UsageError(
            "the saved run has no pipeline-mode timings to compare with",
            "save a complete run with 'pipediag diagnose ... --save FILE' (pipeline mode must have run)",
        )
    if len(usable) < len(plan.kinds):
        notes.append("the saved run has no input_only timings: only the fed step is compared")
    return replace(plan, kinds=tuple(usable))


def _rate_scale(prepared: dict, saved: Diagnosis | None, notes: list[str]) -> dict[str, float]:
    """What each side's batches/s are multiplied by: 1, or its batch size when A's and B's differ
    (then every rate and ratio is in examples/s)."""
    sizes = {name: p.element.batch_size for name, p in prepared.items()}
    if saved is not None:
        sizes["A"] = saved.element.batch_size if saved.element else None
    scale = {"A": 1.0, "B": 1.0}
    if sizes.get("A") and sizes.get("B") and sizes["A"] != sizes["B"]:
        scale = {"A": float(sizes["A"]), "B": float(sizes["B"])}
        notes.append(f"the batch sizes differ (A {sizes['A']}, B {sizes['B']}): every rate and ratio is in examples/s")
    elif "A" in prepared and prepared["A"].element.structure != prepared["B"].element.structure:
        notes.append(f"A and B yield different batches (A: {prepared['A'].element.structure}; "
                     f"B: {prepared['B'].element.structure}); rates are in batches/s")
    return scale


def _side(name: str, prepared, feed, rate_scale: float, notes: list[str]) -> Side:
    """One side's turns: a pipeline that caches warms up over one full pass first, so that no
    round times the cache filling."""
    from pipediag.builder.cache_pass import cache_pass_batches

    passes = cache_pass_batches(prepared)
    until = None
    if passes is not None:

        def until(feed=feed, passes=passes) -> bool:
            return feed.batches > passes

        notes.append(f"{name} caches its data: its first turn warmed up over one full pass ({passes} batches) "
                     "so the cache was filled before any round")
    elif any(s.kind == "cache" for s in prepared.stages):
        notes.append(f"{name} has a cache() whose pass length pipediag cannot tell: early rounds may include "
                     "filling it")
    return Side(name, feed, end_turn=feed.close, warmup_until=until, rate_scale=rate_scale)


def _measure(a, b, saved: Diagnosis | None, model, step, a_kwargs, b_kwargs, batch_size, batched, batch_format,
             plan: ComparePlan, equivalence, fail_if_slower, label_a, label_b, step_label, saved_file,
             progress: CompareProgress, clock_ns, notes: list[str], watchdog: Watchdog):
    from pipediag.builder.prepare import prepare_dataset
    from pipediag.modes.feeds import BatchFeed
    from pipediag.modes.probe import FirstBatchWatch
    from pipediag.steps.make import make_step

    min_batches = plan.warmup_steps + 2
    prepared = {}
    for name, builder, kwargs, given in (("A", a, a_kwargs, label_a), ("B", b, b_kwargs, label_b)):
        if builder is None:
            continue
        progress.phase(f"building {name}: {_label(builder, given, kwargs)}")
        prepared[name] = prepare_dataset(
            builder, kwargs, batch_size, batched, min_batches, clock_ns=clock_ns, who=f"{name}'s dataset",
            guard=watchdog.call, watch=lambda graph, dataset: FirstBatchWatch(  # says early where the batch waits
                graph, dataset.options(), phase=progress.phase, note=getattr(progress, "note", None),
                fixed=watchdog.timeout_s is not None))
        notes.extend(prepared[name].notes)

    progress.phase("building the step")
    first = prepared["A" if "A" in prepared else "B"].first_batch
    the_step = make_step(model, step, step_label, batch_format, first, _step_spec(prepared, step is not None))
    if saved is not None and saved.step is not None and saved.step.description != the_step.info.description:
        notes.append(f"the saved run's step differs from this one's: it was \"{saved.step.description}\"; "
                     "the comparison includes that change")

    scale = _rate_scale(prepared, saved, notes)
    feeds = {name: BatchFeed(p.dataset, the_step.info.batch_format) for name, p in prepared.items()}
    sides = {name: _side(name, p, feeds[name], scale[name], notes) for name, p in prepared.items()}

    baseline_runs = None
    if saved is not None:
        baseline_runs = {FED: saved.runs.get("pipeline"), INPUT_ONLY: saved.runs.get("input_only")}
    rounds = run_rounds(
        sides.get("A"), sides["B"], the_step.run, plan,
        clear=lambda iv: is_clear(iv, equivalence, fail_if_slower), clock_ns=clock_ns,
        baseline={k: baseline_runs[k] for k in plan.kinds} if baseline_runs else None,
        baseline_scale=scale["A"], progress=progress, dispatch=the_step.dispatch, watchdog=watchdog,
    )
    if rounds.stop_reason == STALLED and watchdog.last_stall is not None:
        notes.append(f"{rounds.failed_side}'s turn stalled: {watchdog.last_stall}; the rounds before it are kept")
    if rounds.error is not None:
        notes.insert(0, f"{rounds.failed_side}'s turn failed: {rounds.error.message}; the {len(rounds.rounds)} "
                        "round(s) before it are kept")
    for name, feed in feeds.items():
        if feed.restarts:
            notes.append(f"{name}'s dataset ended and was restarted {feed.restarts} time(s), like an epoch loop; "
                         "restart costs are included")
        feed.close()
    loss_note = the_step.loss_watch.note(standin=the_step.info.kind == "standin") if the_step.loss_watch else None
    notes += [loss_note] if loss_note else []

    def info(name: str) -> SideInfo:
        p = prepared[name]
        return SideInfo(label=_label(a if name == "A" else b, label_a if name == "A" else label_b,
                                     a_kwargs if name == "A" else b_kwargs),
                        source="live", element=p.element, stages=p.stages, cardinality=p.cardinality,
                        first_batch_ms=p.first_batch_ns / 1e6, rate_scale=scale[name])

    if saved is not None:
        side_a = SideInfo(label=saved.target, source="saved", element=saved.element, stages=saved.stages,
                          cardinality=saved.cardinality, first_batch_ms=saved.first_batch_ms, saved_file=saved_file,
                          saved_created_at=saved.created_at, rate_scale=scale["A"])
    else:
        side_a = info("A")
    return side_a, info("B"), the_step.described(), rounds


def _live_numbers(rounds: Rounds, side: str, kind: str, scale: float, log: SampleLog) -> SideNumbers:
    counted = [s for s in rounds.segments if s.side == side and s.kind == kind and 0 <= s.round < len(rounds.rounds)]
    steps = sum(s.run.steps for s in counted)
    total_ns = sum(sum(s.run.step_ns) for s in counted)
    wait_ns = sum(sum(s.run.wait_ns) for s in counted)
    return SideNumbers(
        rate=steps / (total_ns / 1e9) * scale if steps and total_ns > 0 else None,
        steps=steps,
        input_wait_frac=wait_ns / total_ns if kind == FED and total_ns > 0 else None,
        usage=usage(log, [(s.run.start_ns, s.run.end_ns) for s in counted]) if counted else None,
    )


def _saved_numbers(saved: Diagnosis, kind: str, scale: float) -> SideNumbers | None:
    m = saved.modes.get("pipeline" if kind == FED else "input_only")
    if m is None:
        return None
    return SideNumbers(
        rate=None if m.batches_per_sec is None else m.batches_per_sec * scale,
        steps=m.steps,
        input_wait_frac=m.input_wait_frac if kind == FED else None,
        usage=Usage(samples=m.samples, cpu_util_pct=m.cpu_util_pct, process_cpu_pct=m.process_cpu_pct,
                    gpu_util_pct=m.gpu_util_pct, gpu_util_reason=m.gpu_util_reason,
                    throttling=m.throttling, throttling_reason=m.throttling_reason),
    )


def _why_no_interval(rounds: Rounds, plan: ComparePlan) -> str:
    n = len(rounds.rounds)
    if rounds.stop_reason == OUT_OF_MEMORY:
        return f"the step ran out of memory on {rounds.failed_side}'s batches after {n} round(s)"
    if rounds.stop_reason == "input_exhausted":
        return f"{rounds.failed_side}'s input ran out after {n} round(s)"
    if rounds.stop_reason == INTERRUPTED:
        return f"interrupted after {n} round(s); an interval needs 2"
    if rounds.stop_reason == STALLED:
        return f"{rounds.failed_side}'s turn stalled after {n} round(s)"
    if rounds.stop_reason == FAILED:
        return f"{rounds.failed_side}'s code failed after {n} round(s)"
    if rounds.stop_reason == "time_cap":
        return (f"the time cap ({plan.max_seconds:g} s) allowed only {n} round(s); an interval needs 2: "
                "raise --max-seconds")
    return f"only {n} round(s)"


def conclude(side_a: SideInfo, side_b: SideInfo, step_info, rounds: Rounds, saved: Diagnosis | None, environment,
             plan: ComparePlan, equivalence: float, fail_if_slower: float | None, log: SampleLog, notes: list[str],
             elapsed_s: float, batch_size, batch_format) -> Comparison:
    """Measured rounds and samples -> a Comparison: verdicts, per-side numbers, notes. Pure
    (no TensorFlow), so tests build real Comparisons from fake-clock rounds."""
    kinds = plan.kinds
    why = _why_no_interval(rounds, plan)
    verdicts = {k: judge(rounds.intervals.get(k), equivalence, fail_if_slower if k == rounds.primary else None, why)
                for k in kinds}
    sides = {"B": {k: _live_numbers(rounds, "B", k, side_b.rate_scale, log) for k in kinds}}
    if saved is None:
        sides["A"] = {k: _live_numbers(rounds, "A", k, side_a.rate_scale, log) for k in kinds}
    else:
        sides["A"] = {k: n for k in kinds if (n := _saved_numbers(saved, k, side_a.rate_scale)) is not None}
        differences = saved.environment.differences(environment)
        if differences:
            notes.append("the saved run was made on a different machine or software: " + "; ".join(differences) +
                         " — the comparison mixes that change with B's")
        notes.append("A is a saved run: its timings and B's were not interleaved, so a change of the machine "
                     "between the two runs is not in the interval; compare two live pipelines where you can")
        if saved.status != COMPLETE:
            notes.append(f"the saved run is {saved.status}")
        if saved.settings.get("batch_format") not in (None, batch_format):
            notes.append(f"the saved run fed {saved.settings.get('batch_format')} batches, this run {batch_format}")
    notes.extend(rounds.notes)
    iv = rounds.intervals.get(rounds.primary)
    if rounds.stop_reason in ("round_cap", "time_cap") and iv is not None and not iv.excludes_one:
        cap = f"{plan.looks.max_rounds} rounds" if rounds.stop_reason == "round_cap" else f"{plan.max_seconds:g} s"
        notes.append(f"stopped at the cap ({cap}) before the interval was narrow enough to settle it: "
                     "a difference between the interval's ends is still possible; raise --max-seconds or --max-rounds "
                     "to narrow it")
    unit = "examples" if side_a.rate_scale != 1.0 or side_b.rate_scale != 1.0 else "batches"
    return Comparison(
        status=rounds.stop_reason if rounds.stop_reason in (INTERRUPTED, STALLED, FAILED) else COMPLETE,
        a=side_a, b=side_b, step=step_info,
        environment=environment.for_step(step_info.framework if step_info else None),
        baseline_environment=None if saved is None else saved.environment,
        plan=plan.looks, unit=unit, primary=rounds.primary, intervals=dict(rounds.intervals), verdicts=verdicts,
        sides=sides, rounds=rounds.rounds, segments=rounds.segments, stop_reason=rounds.stop_reason,
        looks_taken=rounds.looks_taken, segment_seconds=rounds.segment_seconds, baseline_chunks=rounds.baseline_chunks,
        samples=log,
        settings={
            "batch_size": batch_size, "batch_format": batch_format, "max_seconds": plan.max_seconds,
            "max_rounds": plan.looks.max_rounds, "equivalence": equivalence, "fail_if_slower": fail_if_slower,
            "kinds": list(kinds), "sample_interval_s": log.interval_s,
        },
        notes=tuple(notes), elapsed_s=elapsed_s, error=rounds.error,
    )
