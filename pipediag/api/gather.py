"""What `diagnose()` measures, step by step: the modes, the hand-over, the anatomy, a re-measure
near a threshold, and the tuned pipeline with its ablation. `Gathering.run` calls them in order;
each step adds to a `DiagnoseRun` so that Ctrl-C, a stall or the user's error keeps what was measured.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field, replace
from typing import Any

from pipediag import stats
from pipediag.analysis.eager import eager_use
from pipediag.analysis.modes import input_side_cpu, summarize
from pipediag.analysis.regimes import Regimes
from pipediag.errors import MeasurementError, UserCodeError, error_line
from pipediag.modes.runner import longer, run_mode
from pipediag.modes.watchdog import Watchdog
from pipediag.records.change import Change
from pipediag.records.environment import Environment
from pipediag.records.kinds import DECIDED, INTERRUPTED, OUT_OF_MEMORY, STALLED
from pipediag.records.options import RunOptions
from pipediag.records.phases import PhaseClock, mode_phase
from pipediag.records.run import ModeRun, StopRule
from pipediag.records.stall import RunStalled, Stalled, StallInfo
from pipediag.records.step import EagerUse
from pipediag.samples.sampler import Sampler
from pipediag.steps.step import Observed, Step
from pipediag.verdict.edges import Edge, straddling
from pipediag.verdict.rules import classify_cpu, decide


@dataclass
class DiagnoseRun:
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
    handover_missing: str | None = None  # why the hand-over could not be timed (pipediag's own failure)
    stall: StallInfo | None = None  # where the run stalled, if it did
    failure: UserCodeError | None = None  # the user's code raised after some modes were measured
    running: str | None = None  # the mode (or phase) running now, to say where a failure happened
    eager: EagerUse | None = None  # how the step ran TensorFlow in synthetic mode (None: not watched)
    phases: PhaseClock = field(default_factory=PhaseClock)  # where the wall time went

    def __post_init__(self) -> None:
        self.runs: dict[str, ModeRun] = {}
        self.notes: list[str] = []


@dataclass(frozen=True)
class Plan:
    """What diagnose() was asked to measure, beside the shared RunOptions."""

    modes: tuple[str, ...]
    rule: StopRule
    ram_budget_bytes: int | None
    anatomy: bool
    thorough: bool
    quick: bool = False  # --quick: the anatomy's short windows too (modes.waterfall.QUICK)


# The step wrapped in tf.function is timed over a short window: a compiled step is fast, and its
# gain over an eager one is large (analysis.eager), far from any line a longer window would settle.
COMPILED_STEP_MAX_SECONDS = 3.0
COMPILED_STEP_MIN_SECONDS = 1.0


def eager_gradients_counted():
    """backends.tf.eager_gradients_counted where TensorFlow is imported (it always is with a
    tf.data pipeline); else a block that counts nothing and yields None."""
    if "tensorflow" not in sys.modules:
        return contextlib.nullcontext(None)
    from pipediag.backends.tf import eager_gradients_counted as counted

    return counted()


def observed(step: Step | None) -> Observed:
    if step is None or step.observed is None:
        kind = None if step is None else {"keras": "tensorflow", "standin": "tensorflow"}.get(step.info.kind)
        return Observed(kind, None)
    return step.observed()


class Gathering:
    """One diagnosis's measurements. TensorFlow is imported only once a diagnosis really starts."""

    def __init__(self, state: DiagnoseRun, sampler: Sampler, options: RunOptions, plan: Plan, progress,
                 watchdog: Watchdog):
        self.state, self.sampler, self.options, self.plan = state, sampler, options, plan
        self.progress, self.watchdog, self.clock_ns = progress, watchdog, options.clock_ns
        self.rule = plan.rule
        self.graph = self.dataset = None
        self.feeds: dict = {}  # kept after their modes for their first batches
        self.hideable: dict[str, int | None] = {}  # the device work a fetch can hide behind, from synthetic mode
        self.watch = None  # modes.probe.FirstBatchWatch: the prefixes read while the first batch was awaited

    def run(self, builder) -> None:
        phase = self.state.phases.phase
        with phase("setup"):
            self.prepare(builder)
        oom = self.local_modes()
        if not oom and self.state.runs["synthetic"].steps:
            with phase("handover"):
                self.handover()
        if not oom:
            with phase("remeasure"):
                self.measure_edges_again()
        if not oom and self.wants_compiled_step():
            with phase("compiled_step"):
                self.compiled_step()
        # After the re-measure: whether the stages need timing is judged on the modes the verdict uses.
        readable = self.graph is not None or self.prepared.chain is not None  # a graph, or its Dataset objects
        if self.plan.anatomy and readable and "input_only" in self.plan.modes:
            with phase("anatomy"):
                self.anatomy()
        if "tuned" in self.plan.modes and not oom and self.graph is not None:
            self.tuned()

    # -- the steps, in order ------------------------------------------------------------------------
    def prepare(self, builder) -> None:
        """The dataset, its graph and first batch, and the step built for that batch."""
        from pipediag.builder.prepare import prepare_dataset
        from pipediag.steps.device_memory import DeviceMemory
        from pipediag.steps.make import make_step

        state, options, rule = self.state, self.options, self.rule
        try:
            prepared = prepare_dataset(builder, dict(options.builder_kwargs or {}), options.batch_size,
                                       options.batched, rule.warmup_steps + rule.min_steps, clock_ns=self.clock_ns,
                                       phase=self.progress.phase, guard=self.watchdog.call, watch=self.first_batch_watch)
        except Stalled as stall:  # the first batch never came
            self.graph, self.dataset = getattr(stall, "graph", None), getattr(stall, "dataset", None)
            raise self.stalled("first batch", stall) from None
        self.prepared = prepared
        state.phases.move("setup", "first_batch", prepared.first_batch_ns)
        self.dataset, self.graph = prepared.dataset, prepared.graph
        state.notes.extend(prepared.notes)
        state.stages = prepared.stages
        state.cardinality = prepared.cardinality
        state.first_batch_ms = prepared.first_batch_ns / 1e6
        state.element = prepared.element
        self.first_batch = prepared.first_batch

        self.progress.phase("building the step")
        self.step = make_step(options.model, options.step, options.step_label, options.batch_format,
                              self.first_batch, self.dataset.element_spec)
        state.step = self.step
        self.memory = DeviceMemory(lambda: observed(self.step).framework)

    def local_modes(self) -> bool:
        """Synthetic, pipeline and input-only modes; True when the step ran out of memory with free input."""
        from pipediag.modes.feeds import BatchFeed
        from pipediag.modes.warmup import settling_warmup

        state = self.state
        settled = settling_warmup(self.clock_ns, self.rule.usual_seconds)
        synthetic = self.measure_synthetic(first_step_is_compile=True, warmup_until=settled,
                                           keep_warmup=lambda: settled.settled_since_ns)
        warmup_note = settled.note()
        if warmup_note:
            state.notes.append(warmup_note)
        if synthetic.block_ns:
            self.hideable["ns"] = int(stats.median(synthetic.block_ns))
        oom = synthetic.stop_reason == OUT_OF_MEMORY
        if oom:
            state.notes.append("the step ran out of memory with free input: pipeline and tuned modes were skipped")
        pipeline_decided, input_decided = self.sequential(synthetic)
        if not oom:
            self.feeds["pipeline"] = self.step_feed(self.dataset)
            filled = self.cache_fill(self.feeds["pipeline"])
            self.measure("pipeline", self.feeds["pipeline"], True, decided=pipeline_decided, warmup_until=filled)
            if filled is not None:
                state.notes.append(self.cache_fill_note(filled))
        if "input_only" in self.plan.modes:
            self.feeds["input_only"] = BatchFeed(self.dataset, self.step.info.batch_format)
            self.measure("input_only", self.feeds["input_only"], False, decided=input_decided)
        return oom

    def cache_fill(self, feed):
        """Pipeline mode's warm-up condition when the user's pipeline caches: one full pass first,
        so that pipeline and input_only modes time the cached epochs, as every epoch after the
        first runs (a first pass measured alone made a cached MNIST pipeline look input-bound)."""
        from pipediag.builder.cache_pass import cache_pass_batches
        from pipediag.modes.warmup import CacheFilled

        passes = cache_pass_batches(self.prepared)
        if passes is None:
            if any(s.kind == "cache" for s in self.prepared.stages):
                self.state.notes.append("your pipeline caches, but pipediag cannot tell how many batches its first pass "
                                        "takes: pipeline and input_only modes may include filling the cache")
            return None
        return CacheFilled(lambda: feed.batches, passes, self.clock_ns, self.rule.warmup_max_seconds)

    def cache_fill_note(self, filled) -> str:
        cache = next(s for s in self.prepared.stages if s.kind == "cache")
        if filled.filled:
            return (f"your pipeline caches ({cache.label}): pipeline mode warmed up over its first pass "
                    f"({filled.pass_batches} batches, {filled.seconds:.1f} s), so the modes time the cached epochs, "
                    "as every epoch after the first runs")
        if filled.gave_up_projected_s is not None:
            return (f"your pipeline caches ({cache.label}), but its first pass ({filled.pass_batches} batches) would "
                    f"take about {filled.gave_up_projected_s:.0f} s, more than the warm-up's "
                    f"{self.rule.warmup_max_seconds:.0f} s: pipeline and input_only modes timed the first, uncached "
                    "pass; the epochs after it read from the cache and may be faster")
        return (f"your pipeline caches ({cache.label}): its first pass ({filled.pass_batches} batches) had not "
                f"ended after {filled.seconds:.1f} s of warm-up: the modes may include filling the cache")

    def sequential(self, synthetic: ModeRun):
        """The `decided` conditions of pipeline and input_only modes, compared as they run with
        synthetic mode (verdict.sequential); none under --thorough, or without a synthetic rate."""
        from pipediag.verdict.sequential import InputOnlyDecided, PipelineDecided, rate_reading

        free = rate_reading(synthetic.step_ns)
        if self.plan.thorough or free is None or free.interval is None:
            return None, None
        return PipelineDecided(free), InputOnlyDecided(free)

    def handover(self) -> None:
        """Time the hand-over of an already-produced batch (modes/handover.py). It runs only pipediag's
        code (the batch is made): a failure is pipediag's, kept as a note and as `handover_missing`,
        which the verdict reads (a wait it could have explained then lowers the confidence)."""
        from pipediag.modes.handover import measure_handover

        self.progress.phase("timing the hand-over of a ready batch")
        through = self.handover_through()
        feed_of = None if through is None else (lambda data: self.step_feed(data, keep_first=0))
        try:
            self.state.handover = measure_handover(self.first_batch, self.step.info.batch_format,
                                                   observed(self.step).framework, self.rule, clock_ns=self.clock_ns,
                                                   feed_of=feed_of, through=through)
        except MeasurementError as error:
            self.state.handover_missing = error.message
            self.state.notes.append(f"the hand-over of a ready batch could not be timed: {error.message} "
                                    "(a fault in pipediag, not in your step; please report it)")
            return
        self.handover_beside_step()

    def handover_beside_step(self) -> None:
        """The ready batch's get_next timed again with the step run between the calls, as in
        pipeline mode's loop, where the reading with nothing between them leaves the step's wait
        unexplained although the pipeline keeps up (verdict.handover_edge.wants_beside_step)."""
        from pipediag.analysis.handover import with_beside_step
        from pipediag.modes.handover import MAX_SECONDS, MIN_SECONDS, repeated_batch
        from pipediag.verdict.handover_edge import wants_beside_step

        state, log = self.state, self.sampler.log()
        modes = {name: summarize(state.runs[name], log) if name in state.runs else None
                 for name in ("synthetic", "pipeline", "input_only")}
        if not wants_beside_step(modes["synthetic"], modes["pipeline"], modes["input_only"], state.handover):
            return
        self.progress.phase("timing the hand-over of a ready batch beside the step")
        short = replace(self.rule, max_seconds=min(self.rule.max_seconds, MAX_SECONDS),
                        min_seconds=min(self.rule.min_seconds, MIN_SECONDS), soft_max_seconds=None)
        run = self.measure("handover_beside_step", self.step_feed(repeated_batch(self.first_batch), keep_first=0),
                           True, mode_rule=short, record=False)
        state.handover = with_beside_step(state.handover, run)

    def compiled_missing(self) -> str | None:
        """Why the step cannot be timed wrapped in tf.function (fixes.eager says it in the fix's
        basis), or None where it can."""
        if self.step.compiled is not None:
            return None if not self.plan.quick else "--quick measures no fix"
        return {"keras": "a Keras model compiled with run_eagerly=True: pipediag runs the model as it is compiled",
                "script_loop": "a script's own loop: pipediag swaps its batches, not its code"}.get(
            self.step.info.kind, "pipediag cannot wrap this step in tf.function itself")

    def wants_compiled_step(self) -> bool:
        """An eager TensorFlow step that pipediag can wrap in tf.function, on a verdict so far that
        the step itself limits (compute or host): what the step runs at compiled is the fix's
        measure. Not for an input or memory verdict, where a faster step would not train faster,
        nor under --quick, which measures no fix."""
        eager = self.state.eager
        if eager is None or not eager.eager or eager.compiled_missing is not None:
            return False
        return self.verdict_so_far().bottleneck in ("compute", "host")

    def compiled_step(self) -> None:
        """The step wrapped in tf.function by pipediag, timed on synthetic mode's constant batch over
        a short window (COMPILED_STEP_MAX_SECONDS); a step tf.function cannot trace (a `.numpy()` or
        a print of a value inside it, a variable made on every call) is said so, and its fix stays
        unmeasured. The user's model trains on in the wrapped step's few seconds, as it did in
        synthetic mode."""
        state = self.state
        self.progress.phase("timing the step wrapped in tf.function")
        rule = replace(self.rule, max_seconds=min(self.rule.max_seconds, COMPILED_STEP_MAX_SECONDS),
                       min_seconds=min(self.rule.min_seconds, COMPILED_STEP_MIN_SECONDS), soft_max_seconds=None)
        missing = None
        try:
            compiled = self.measure("compiled_step", self.free_input(), True, mode_rule=rule, record=False,
                                    first_step_is_compile=True, step=self.step.compiled())
        except UserCodeError as error:
            missing = f"tf.function could not run it: {error_line(error.error)}"
            compiled = None
        if compiled is not None and compiled.error is not None:
            missing, compiled = f"it stopped: {compiled.error.type}: {compiled.error.message}", None
        log = self.sampler.log()  # one snapshot, after both windows: it holds the samples of each
        state.eager = eager_use(state.eager.eager_gradients, state.eager.steps, summarize(state.runs["synthetic"], log),
                                None if compiled is None else summarize(compiled, log), missing)

    def anatomy(self) -> None:
        """The pipeline timed after each stage, naming the slow stage; a graph it cannot cut is a note.
        When the modes already put the limit outside the input pipeline with high confidence
        (fixes.worth_tuning.stages_untimed_reason), only the stages' sizes are read, and a note says why."""
        from pipediag.builder.graph import GraphError, PipelineGraph
        from pipediag.modes.waterfall import QUICK, THOROUGH, WaterfallRule, measure_anatomy, measure_sizes

        state = self.state
        untimed = self.stages_untimed_reason()
        self.progress.phase("reading the size of each stage's elements" if untimed
                            else "timing the pipeline after each stage (anatomy)")
        state.running = "the anatomy"
        try:
            chain = self.prepared.chain  # a graph over 2 GiB: the user's Dataset objects are the cuts
            graph = PipelineGraph.from_dataset(self.dataset) if chain is None else chain
            if untimed is not None:
                state.stages = tuple(measure_sizes(graph, self.dataset.options(), clock_ns=self.clock_ns,
                                                   watchdog=self.watchdog))
                state.notes.append(f"the stages were not timed one by one (no anatomy): {untimed}")
                return
            waterfall_rule = THOROUGH if self.plan.thorough else QUICK if self.plan.quick else WaterfallRule()
            result = measure_anatomy(
                graph, self.dataset.options(),
                batch_size=state.element.batch_size, rule=waterfall_rule,
                first_batch_s=self.prepared.first_batch_ns / 1e9, clock_ns=self.clock_ns, watchdog=self.watchdog,
            )
            state.stages, state.anatomy = tuple(result.stages), result.anatomy
        except GraphError as error:
            state.notes.append(f"no anatomy: {error}")
        except Stalled as stall:
            raise self.stalled("anatomy", stall) from None

    def stages_untimed_reason(self) -> str | None:
        """Why timing each stage could not change the answer (fixes.worth_tuning), or None; never under --thorough."""
        from pipediag.fixes.worth_tuning import stages_untimed_reason

        return None if self.plan.thorough else stages_untimed_reason(self.verdict_so_far())

    def measure_edges_again(self) -> None:
        """A verdict reading sat within its run-to-run spread of its threshold, or the free step was
        timed slower than the step runs where that could change the verdict: measure the two modes
        it compares again, back to back and longer, rather than decide on a coin toss."""
        edges, free_step = readings_to_measure_again(self.state, self.sampler.log())
        if not edges and free_step is None:
            return
        longer_rule = longer(self.rule)
        synthetic = self.measure("synthetic", self.free_input(), True, mode_rule=longer_rule)
        decided = self.contention_decided(synthetic, edges)
        pipeline_rule = longer_rule if decided is None else replace(longer_rule, decide_min_seconds=self.rule.min_seconds)
        self.feeds["pipeline"] = self.step_feed(self.dataset)
        pipeline = self.measure("pipeline", self.feeds["pipeline"], True, mode_rule=pipeline_rule, decided=decided)
        window = f"over {longer_rule.max_seconds:.0f} s each"
        if pipeline.stop_reason == DECIDED:
            window = (f"synthetic over {longer_rule.max_seconds:.0f} s, pipeline until the reading was decided "
                      f"({decided.reason}, after {(pipeline.end_ns - pipeline.start_ns) / 1e9:.1f} s)")
        why = []
        if edges:
            why.append("a verdict reading sat within its spread of its threshold ("
                       + "; ".join(Edge(**{k: v for k, v in e.items() if k != "straddles"}).text() for e in edges) + ")")
        if free_step is not None:
            why.append(free_step)
        self.state.notes.append(
            "; ".join(why) + f": synthetic and pipeline modes were measured again, back to back, {window}, and the "
            "verdict uses those runs"
        )

    def contention_decided(self, synthetic: ModeRun, edges: list[dict]):
        """The measured-again pipeline run's `decided` condition (verdict.sequential.ContentionDecided)
        when only the contention rule's readings sat on the line; None (run to the end) otherwise,
        under --thorough, or without a synthetic rate."""
        from pipediag.verdict.sequential import ContentionDecided, rate_reading

        free = rate_reading(synthetic.step_ns)
        if (self.plan.thorough or free is None or free.interval is None
                or any(e.get("rule") != "cpu_contention" for e in edges)):
            return None
        return ContentionDecided(free, synthetic.compute_ns)

    def tuned(self) -> None:
        """Plan the tuned rewrite from the measured modes, then run it with its ablation, unless
        no such run could change the fixes (fixes.worth_tuning): then a note says why."""
        from pipediag.tuner.ablation import TuningOutcome, tune_with_ablation

        state = self.state
        self.progress.phase("tuning the pipeline")
        state.running = "tuning"
        with state.phases.phase("tuning_plan"):
            plan, measured = self.plan_tuned()
            skipped = self.skip_tuned(plan)
            reference = None if skipped else self.reference()
        if skipped:
            return
        state.tuning_outcome = outcome = TuningOutcome(changes=list(plan.changes))
        try:
            with state.phases.phase("variant_builds"):  # the variants' own runs are booked apart (run_variant)
                tune_with_ablation(
                    plan, baseline=measured, reference=reference, run_variant=self.run_variant,
                    summarize=lambda r: summarize(r, self.sampler.log()), rule=self.rule,
                    thorough=self.plan.thorough, outcome=outcome, clock_ns=self.clock_ns,
                    guard=self.watchdog.call, tuned_decided=self.tuned_decided,
                    control_decided=self.full_control_decided,
                    again_decided=self.control_again_decided,
                    free_input_ci=self.free_input_ci(), run_free_input=self.free_input_again,
                )
        except Stalled as stall:  # filling a variant's cache (a stall in a variant's mode is a RunStalled)
            raise self.stalled("tuned", stall, reads_pipeline=False) from None
        finally:  # what ran is kept, also when a later run could not (pipediag run: the script's steps ran out)
            state.tuning = tuple(outcome.changes)
            state.notes.extend(outcome.notes)
            state.cache_fill_ms = None if outcome.cache_fill_ns is None else outcome.cache_fill_ns / 1e6
            state.tuned_check = None if outcome.tuned_check is None else outcome.tuned_check.text

    def plan_tuned(self):
        """The tuning plan for the user's pipeline, and pipeline mode's summary (the ablation's baseline)."""
        from pipediag.tuner.rewrite import facts_for, plan_tuning

        state = self.state
        log = self.sampler.log()
        measured = summarize(state.runs["pipeline"], log)
        input_side = summarize(state.runs["input_only"], log) if "input_only" in state.runs else measured
        side = input_side_cpu(measured, input_side if "input_only" in state.runs else None)
        facts = facts_for(self.dataset, ram_budget_bytes=self.plan.ram_budget_bytes,
                          fill_budget_seconds=self.rule.max_seconds,
                          latency_bound=side is not None and classify_cpu(side).kind == "idle",
                          container=self.sampler.container)
        try:
            plan = plan_tuning(self.dataset, facts, input_batches_per_sec=input_side.batches_per_sec,
                               clock_ns=self.clock_ns, reads=self.budgeted_read)
        except Stalled as stall:  # the plan's own reads: a cache's size, the CSV files, a vectorize check
            raise self.stalled("tuned", stall) from None
        state.candidates = [(c.key, c.kind, c.stage) for c in plan.candidates]
        state.tuning = tuple(plan.changes)
        return plan, measured

    def skip_tuned(self, plan) -> bool:
        """True, with the note that says why, when the tuned run could not change the fixes."""
        from pipediag.fixes.worth_tuning import skip_reason

        state = self.state
        why = skip_reason(self.verdict_so_far(), plan.candidates)
        if why is None:
            return False
        if plan.candidates:  # planned but not measured: the note names them, Fixes does not list them as tried
            state.tuning = ()
        state.notes.append(why)
        return True

    # -- the parts the steps share -----------------------------------------------------------------
    def verdict_so_far(self):
        """The verdict on the modes measured so far (fixes.worth_tuning.verdict_so_far)."""
        from pipediag.fixes.worth_tuning import verdict_so_far

        state, log = self.state, self.sampler.log()
        environment = state.environment
        return verdict_so_far({name: summarize(run, log) for name, run in state.runs.items()},
                              stages=state.stages, handover=state.handover, container=log.container,
                              gpus_present=bool(environment and environment.gpus),
                              ram_budget_bytes=self.plan.ram_budget_bytes)

    def budgeted_read(self, fn, what: str, budget_s: float):
        """A read with a time budget of its own (the tuning plan's): under the watchdog, its
        deadline the budget plus the stall deadline, its time not one the deadline fits."""
        return self.watchdog.call(fn, what, budget_s + self.watchdog.deadline_s(), fits=False)

    def reference(self):
        """The batches a tuned variant's output is checked against, and whether they can match."""
        from pipediag.tuner.ablation import Reference
        from pipediag.tuner.checks import is_deterministic

        deterministic, why_random = is_deterministic(
            any(s.is_random for s in self.prepared.stages), self.feeds["pipeline"].firsts,
            self.feeds["input_only"].firsts if "input_only" in self.feeds else None,
        )
        return Reference(self.feeds["pipeline"].firsts or [self.first_batch], deterministic, why_random)

    def run_variant(self, name: str, variant, variant_rule: StopRule, decided=None):
        feed = self.step_feed(variant)
        result = self.measure(name, feed, True, mode_rule=variant_rule, record=name == "tuned",  # closes the feed
                              decided=decided)
        return result, feed.firsts

    def tuned_decided(self, reference_rate: float, reference_ci: tuple[float, float] | None):
        """The tuned run's `decided` condition (verdict.sequential.TunedDecided): its speedup over
        `reference_rate` clear of the gain lines, and its rate clear of synthetic mode's; none under
        --thorough or without intervals."""
        from pipediag.verdict.sequential import RateReading, TunedDecided, rate_reading

        synthetic = self.state.runs.get("synthetic")
        free = rate_reading(synthetic.step_ns) if synthetic is not None else None
        if self.plan.thorough or reference_ci is None or free is None or free.interval is None:
            return None
        return TunedDecided(RateReading(reference_rate, *reference_ci), free)

    def free_input_ci(self) -> tuple[float, float] | None:
        """Synthetic mode's rate interval (the latest run of it), or None."""
        synthetic = self.state.runs.get("synthetic")
        return None if synthetic is None else summarize(synthetic, self.sampler.log()).batches_per_sec_ci

    def free_input_again(self, rule: StopRule) -> ModeRun:
        """The step on synthetic data once more, during the ablation (not recorded as a mode)."""
        return self.measure("free input again", self.free_input(), True, mode_rule=rule, record=False)

    def full_control_decided(self, undecided: list):
        """The full-window control's `decided` condition (verdict.sequential.FullControlDecided)
        for the ablation's runs it must decide (analysis.ablation.VariantResult); none under --thorough."""
        from pipediag.verdict.sequential import FullControlDecided, RateReading

        if self.plan.thorough:
            return None
        return FullControlDecided([RateReading(v.batches_per_sec, *v.batches_per_sec_ci) for v in undecided])

    def control_again_decided(self, first, alone: list):
        """The control again's `decided` condition (verdict.sequential.ControlAgainDecided), from
        the first control and the changes' alone runs (analysis.ablation.VariantResult); none under
        --thorough or where the first control has no interval."""
        from pipediag.verdict.sequential import ControlAgainDecided, RateReading

        if self.plan.thorough or first.batches_per_sec_ci is None:
            return None
        return ControlAgainDecided(RateReading(first.batches_per_sec, *first.batches_per_sec_ci),
                                   [RateReading(v.batches_per_sec or 0.0, *(v.batches_per_sec_ci or (None, None)))
                                    for v in alone])

    def step_feed(self, data, keep_first: int | None = None):
        """The batches of `data` as the step takes them: per replica under a tf.distribute strategy.
        `keep_first`: how many first batches the feed keeps (None: the feeds' default)."""
        from pipediag.modes.feeds import FIRST_BATCHES_KEPT, BatchFeed

        keep = FIRST_BATCHES_KEPT if keep_first is None else keep_first
        if self.step.strategy is not None:
            from pipediag.modes.distributed import DistributedFeed

            return DistributedFeed(data, self.step.strategy, keep_first=keep)
        return BatchFeed(data, self.step.info.batch_format, keep_first=keep)

    def handover_through(self) -> str | None:
        """The distributed iterator the step's batches come through, in words; None: a plain feed."""
        if self.step.strategy is None:
            return None
        from pipediag.modes.distributed import iterator_text

        return iterator_text(self.step.strategy)

    def measure_synthetic(self, **kw) -> ModeRun:
        """Synthetic mode, with the step's eager gradient reads counted over it (state.eager)."""
        with eager_gradients_counted() as counted:
            synthetic = self.measure("synthetic", self.free_input(), True, **kw)
        if counted is not None:
            self.state.eager = eager_use(counted.calls, synthetic.warmup_steps + synthetic.steps,
                                         compiled_missing=self.compiled_missing())
        return synthetic

    def free_input(self):
        """Synthetic mode's one batch, handed out forever (on every replica's device under a strategy)."""
        from pipediag.modes.feeds import constant_feed

        if self.step.strategy is not None:
            from pipediag.modes.distributed import distributed_constant

            return distributed_constant(self.first_batch, self.step.strategy)
        return constant_feed(self.first_batch, self.step.info.batch_format)

    def measure(self, name: str, next_batch, with_step: bool, mode_rule: StopRule | None = None,
                record: bool = True, step: Step | None = None, **kw) -> ModeRun:
        """One mode, recorded in the state; an interrupt or stall in it ends the gathering.
        `step`: another step than the one under test (the step wrapped in tf.function)."""
        state = self.state
        step = step or self.step
        self.progress.phase(f"{name} mode")
        state.running = f"{name} mode"
        if with_step:
            self.memory.start()
        # A JAX or PyTorch step runs with one step in flight while the next batch is fetched, as
        # a training loop runs it; the wait is then the part of each fetch the device did not hide.
        dispatch = step.dispatch if with_step else None
        step_fn = step.run if with_step and dispatch is None else None
        booked = mode_phase(name, state.phases.current)
        with state.phases.phase(booked):
            try:
                result = run_mode(
                    name, next_batch, step_fn, mode_rule or self.rule, clock_ns=self.clock_ns,
                    progress=self.progress.mode, dispatch=dispatch,
                    hideable_ns=self.hideable.get("ns") if dispatch else None, watchdog=self.watchdog,
                    paused_ns=getattr(step, "paused_ns", None) if with_step else None, **kw,
                )
            finally:
                self.close_feed(name, next_batch, record)
        state.phases.move(booked, "warmup", result.warmup_ns)
        if with_step:
            result = replace(result, device_memory=self.memory.stop())
        if record:
            state.runs[name] = result
        if result.stop_reason == INTERRUPTED:
            raise KeyboardInterrupt
        if result.stop_reason == STALLED:
            reads_pipeline = name in ("pipeline", "input_only")  # a variant's graph is not the user's
            raise self.stalled(name, self.watchdog.last_stall, steps=result.steps, reads_pipeline=reads_pipeline)
        return result

    def close_feed(self, name: str, next_batch, record: bool) -> None:
        """Free the iterator now: its prefetch threads and buffers (a big shuffle buffer) must not
        linger into the next mode's measurement. Its first batches stay."""
        from pipediag.modes.feeds import BatchFeed

        if isinstance(next_batch, BatchFeed):
            next_batch.close()
            if next_batch.restarts and record:
                self.state.notes.append(
                    f"{name} mode: the dataset ended and was restarted {next_batch.restarts} time(s); "
                    "restart costs are included"
                )

    def first_batch_watch(self, graph, dataset):
        """While the first batch is awaited: say early where it waits (modes.probe), kept for the report."""
        from pipediag.modes.probe import FirstBatchWatch

        self.watch = FirstBatchWatch(graph, dataset.options(), phase=self.progress.phase,
                                     note=getattr(self.progress, "note", None), fixed=self.watchdog.timeout_s is not None)
        return self.watch

    def stalled(self, mode: str, stall: Stalled, steps: int = 0, reads_pipeline: bool = True) -> RunStalled:
        """The run ends here; for a mode reading the user's pipeline, the stage that stalls: from
        the prefixes read while the first batch was awaited, or read now with short deadlines."""
        from pipediag.modes.probe import FIRST_ELEMENT_S, locate

        info = StallInfo(mode=mode, what=stall.what, waited_s=round(stall.waited_s, 3), timeout_s=stall.timeout_s,
                         steps=steps)  # a step that did not return: no stage of the pipeline to name
        if not reads_pipeline or stall.in_step:
            return RunStalled(info)
        watch = self.watch if mode == "first batch" else None
        if watch is not None and watch.finding is not None:
            finding, readings, after = watch.finding, watch.readings, watch.probed_after_s
        elif self.graph is None:
            return RunStalled(replace(info, stage_reason="the pipeline's graph could not be read"))
        else:
            self.progress.phase("finding the stage that stalls")
            # A first element within a few seconds, or a few slowest calls: not the whole deadline again.
            first_s = min(stall.timeout_s, max(FIRST_ELEMENT_S, 2 * (self.watchdog.slowest_s or 0.0)))
            (finding, readings), after = locate(self.graph, self.dataset.options(), first_s), stall.waited_s
        return RunStalled(replace(info, stage=finding.stage, stage_reason=finding.reason, probe=readings,
                                  probed_after_s=round(after, 3)))


def readings_to_measure_again(state: DiagnoseRun, log) -> tuple[list[dict], str | None]:
    """The verdict's readings that straddle their threshold, and why the free step may have been
    timed slower than the step runs where that could change the verdict (facts.free_step_regimes,
    facts.free_step_slower_than_fed), judged on the modes run so far."""
    if "synthetic" not in state.runs or "pipeline" not in state.runs:
        return [], None
    summaries = {name: summarize(run, log) for name, run in state.runs.items()}
    facts = decide(summaries, container=log.container).facts
    return straddling(facts), free_step_understated(facts)


def free_step_understated(facts: dict) -> str | None:
    """Why the free step may have been timed slower than the step runs, in words, or None."""
    if facts.get("free_step_regimes") is not None:
        return (f"with free input the step ran at two speeds ({Regimes(**facts['free_step_regimes']).text()}), and "
                "its fast stretches could make the input side the limit")
    slower = facts.get("free_step_slower_than_fed")
    if slower is not None:
        return (f"the step ran {slower['ratio']:.2f}x slower alone ({slower['free_ms']:.2f} ms) than beside the "
                f"pipeline ({slower['fed_ms']:.2f} ms), and at the fed step's speed the input side could be the limit")
    return None
