"""One `pipediag run`: the datasets the script iterates, the phase it is in, and the hand-over
from the observed loop to the windows and back.

    observing ─▶ windows (the loop fed by the controller thread) ─▶ stop | resumed (--then continue)

Everything here runs in the script's own thread except the windows (run.swap) and the
first-batch timer. The phase changes only in the script's thread, inside `take`.
"""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass, field
from typing import Any

from pipediag.api.gather import DiagnoseRun, Plan
from pipediag.errors import UserCodeError
from pipediag.modes.watchdog import Watchdog
from pipediag.records.options import RunOptions
from pipediag.records.run import StopRule
from pipediag.records.stall import RunStalled
from pipediag.results.diagnose import MODE_NAMES
from pipediag.run import budget as steps_budget
from pipediag.run.budget import StepBudget
from pipediag.run.hooks import Tap
from pipediag.run.observe import FIT, Source
from pipediag.run.site import Sites
from pipediag.run.swap import BATCH, RESUME, STOP, Handoff, Windows

OBSERVING, WINDOWS, RESUMED, DONE = "observing", "windows", "resumed", "done"
THEN_STOP, THEN_CONTINUE = "stop", "continue"
JOIN_S = 30.0  # how long the end of the script waits for windows that cannot see it ended (a cache fill)


class StopScript(BaseException):
    """pipediag ends the script: the diagnosis is done (--then stop), or the script cannot be
    diagnosed (a refusal). A BaseException, so the script's `except Exception` lets it through."""


@dataclass(frozen=True)
class Fault:
    """Why the diagnosis could not be made (or finished): one message, a HINT, an exit code."""

    message: str
    hint: str
    exit_code: int


@dataclass(frozen=True)
class ScriptPlan:
    """What `pipediag run` was asked for, beside the shared RunOptions."""

    then: str = THEN_STOP
    observe_steps: int | None = None  # None: until the step rate is stable (the window rule)
    rule: StopRule = field(default_factory=StopRule)  # each window's (and the observation's) stop rule
    first_batch_timeout_s: float = 300.0
    modes: tuple[str, ...] = MODE_NAMES
    anatomy: bool = True
    ram_budget_bytes: int | None = None


class Session:
    def __init__(self, plan: ScriptPlan, options: RunOptions, target: str):
        self.plan, self.options, self.clock_ns = plan, options, options.clock_ns
        self.sites = Sites()
        self.sources: dict[int, Source] = {}
        self.fit: Source | None = None
        self.training: Source | None = None
        self.phase = OBSERVING
        self.active = True
        self.fault: Fault | None = None
        self.windows_error: BaseException | None = None
        self.observed_by: str | None = None  # why the observation ended: stable, time_cap, max_steps
        self.handoff = Handoff(self.clock_ns)
        self.state = DiagnoseRun(target=target)
        self.sampler = None
        self._first_request = True
        self._controller: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self.windows_done = threading.Event()
        self.budget: StepBudget | None = None  # the steps the script runs on its training dataset, when known
        self.budget_short: tuple[str, str] | None = None  # (what, what to do) when the plan cannot fit
        self.budget_from = 0  # the training dataset's batches taken before the budgeted fit began

    # -- start and end ---------------------------------------------------------------------------
    def start(self, sampler, environment) -> None:
        self.sampler, self.state.environment = sampler, environment
        self._timer = threading.Timer(self.plan.first_batch_timeout_s, self._no_first_batch)
        self._timer.daemon = True
        self._timer.start()

    def _no_first_batch(self) -> None:
        if any(s.taken for s in self.sources.values()) or self.fault is not None or not self.active:
            return
        seen = (f"; the script made {len(self.sources)} iterator source(s) but took no batch"
                if self.sources else "")
        self.fault = Fault(
            f"no tf.data dataset was iterated within --first-batch-timeout {self.plan.first_batch_timeout_s:g} s"
            f"{seen}: the script was stopped",
            "pipediag run sees batches taken from a tf.data.Dataset in Python (a loop over it, or model.fit; a "
            "loop inside a tf.function runs in the graph, out of its reach); "
            "if the script prepares data for longer, raise --first-batch-timeout; if it trains from arrays or a "
            "generator, wrap them in tf.data.Dataset.from_tensor_slices / from_generator",
            4)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    def close(self) -> None:
        """The script has ended (or was stopped): the windows end with it."""
        self.active = False
        if self._timer is not None:
            self._timer.cancel()
        if self._controller is not None and self._controller.is_alive():
            self.handoff.loop_gone()
            self._controller.join(JOIN_S)
            if self._controller.is_alive():
                self.state.notes.append("the windows were still running (outside any step) when the script ended; "
                                        "what they had measured is kept")

    def refuse(self, message: str, hint: str) -> None:
        """The script does something pipediag run cannot diagnose: say so and end it now."""
        self.fault = Fault(message, hint, 2)
        raise StopScript

    # -- the datasets ------------------------------------------------------------------------------
    def source_for(self, dataset: Any, kind: str, strategy: Any = None, made_ns: int = 0) -> Source:
        """The dataset's Source, told that the loop made a new iterator over it (in `made_ns`)."""
        source = self.sources.get(id(dataset))
        if source is None or source.dataset is not dataset:
            source = Source(dataset, len(self.sources) + 1, self.sites.of(dataset), kind, strategy=strategy,
                            warmup_steps=self.plan.rule.warmup_steps)
            self.sources[id(dataset)] = source
        now = self.clock_ns()
        for other in self.sources.values():  # another loop starts (validation): the others' steps end
            if other is not source:
                other.steps.cut(now)
        source.iterators += 1
        source.steps.current_epoch = source.iterators  # a loop's new iterator: an epoch's start
        source.steps.pending_made_ns = made_ns
        return source

    def tap(self, source: Source, iterator: Any) -> Tap:
        return Tap(self, source, iterator)

    def fit_source(self, x: Any, model: Any, budget: StepBudget | None = None) -> Source | None:
        from pipediag.backends.tf import keras

        if self.phase != OBSERVING:
            return None
        source = self.source_for(x, FIT)
        source.kind, source.model_name = FIT, getattr(model, "name", "model")
        if keras.backend.backend() == "jax":
            source.batch_format, source.framework = "keras-jax", "jax"
        strategy = getattr(model, "distribute_strategy", None)
        if strategy is not None and type(strategy).__name__ != "_DefaultDistributionStrategy":
            source.strategy = strategy
        self.fit = source
        if budget is not None and self.plan.observe_steps is None:
            self.budget_from = source.taken  # an earlier fit's batches are not this fit's
            self.plan_steps(budget)
        return source

    def plan_steps(self, budget: StepBudget) -> None:
        """Fit the observation and the windows into the steps the script runs, and say the plan
        (or that even the smallest one cannot fit) now, before the script ends."""
        self.budget, rule = budget, self.plan.rule
        progress = self.options.progress
        if steps_budget.fits(budget, rule):
            text = steps_budget.plan_text(budget, rule)
            self.state.notes.append(text)
        else:
            self.budget_short = steps_budget.shortfall(budget, rule)
            text = f"{self.budget_short[0]}; HINT: {self.budget_short[1]}"
        if progress is not None:
            progress.phase(text)

    def steps_left(self) -> int | None:
        """The training dataset's steps the script has not run yet (None: not known)."""
        if self.budget is None or self.training is None:
            return None
        return self.budget.total - (self.training.taken - self.budget_from) - self.handoff.steps

    def cut(self, source: Source) -> None:
        """The loop's step ended, and what follows until its next request is no step (validation,
        an epoch's end): cut out of the observed steps, paused in a window's."""
        now = self.clock_ns()
        source.steps.cut(now)
        source.after.cut(now)
        if self.phase == WINDOWS and source is self.training:
            self.handoff.pause()

    # -- a batch the loop asks for ------------------------------------------------------------------
    def take(self, source: Source, real_next) -> Any:
        phase = self.phase
        if phase == OBSERVING and self.active:
            now = self.clock_ns()
            source.steps.cut(now)
            if self.fit is None or source is self.fit:
                reason = source.enough(self.plan.rule, self.plan.observe_steps, now)
                if not reason and self.budget is not None and source is self.fit:
                    reason = self._out_of_observation(source)
                if reason:
                    return self._start_windows(source, reason, real_next)
            return source.observe(source.steps, real_next, self.clock_ns)
        if source is not self.training:
            return real_next()
        if phase == WINDOWS:
            return self._request(source, real_next)
        if phase == RESUMED:
            source.after.cut(self.clock_ns())
            return source.observe(source.after, real_next, self.clock_ns)
        if phase == DONE and self.plan.then == THEN_STOP:
            raise StopScript
        return real_next()

    def _out_of_observation(self, source: Source) -> str | None:
        """"max_steps" once the observation has used its share of a fit's known steps (never,
        when even the smallest plan cannot fit: then the whole fit is observed)."""
        observed = source.taken - self.budget_from
        warmup = max(source.steps.warmup_steps, source.cache_pass or 0)  # a first pass filling a cache: warm-up
        if self.budget_short is not None or observed < steps_budget.observe_cap(self.budget, self.plan.rule, warmup):
            return None
        if source.steps.steps <= source.steps.warmup_steps:
            return None
        after_fill = (f", counted after the first pass that filled the cache ({warmup} steps)"
                      if warmup > self.plan.rule.warmup_steps else "")
        self.state.notes.append(f"the observation ended at its share of the script's steps ({observed}{after_fill}), "
                                "stable or not")
        return "max_steps"

    def _start_windows(self, source: Source, reason: str, real_next) -> Any:
        self.training, self.phase, self.observed_by = source, WINDOWS, reason
        run = source.pipeline_run(reason)
        if run is not None:
            self.state.runs["pipeline"] = run
        self._controller = threading.Thread(target=self._windows, name="pipediag-run-windows", daemon=True)
        self._controller.start()
        return self._request(source, real_next)

    def _request(self, source: Source, real_next) -> Any:
        step_done, self._first_request = not self._first_request, False
        command, batch = self.handoff.request(step_done)
        if command == BATCH:
            return batch
        if command == RESUME:
            self.phase = RESUMED
            return source.observe(source.after, real_next, self.clock_ns)
        self.phase = DONE
        raise StopScript

    def _windows(self) -> None:
        """The controller thread: the windows, then tell the loop to resume or stop."""
        plan, state = self.plan, self.state
        gather_plan = Plan(modes=plan.modes, rule=plan.rule, ram_budget_bytes=plan.ram_budget_bytes,
                           anatomy=plan.anatomy, thorough=False)
        progress = self.options.progress or _Silent()
        windows = Windows(state, self.sampler, self.options, gather_plan, progress,
                          Watchdog(self.options.stall_timeout_s), self.training, self.handoff, self.steps_left)
        try:
            windows.run()
        except KeyboardInterrupt:  # the script ended or was interrupted during a window
            state.interrupted = True
        except RunStalled as stalled:
            state.stall = stalled.info
        except UserCodeError as error:
            state.failure = error
            state.notes.insert(0, f"{state.running or 'the windows'} failed: {error.message}; the modes measured "
                                  "before it are kept")
        except Exception as error:  # noqa: BLE001 - a window's failure must not take the user's training down
            self.windows_error = error
            state.notes.insert(0, f"{state.running or 'the windows'} stopped on an error inside pipediag: "
                                  f"{type(error).__name__}: {error}; the modes measured before it are kept")
        finally:
            state.running = None
            if windows.caps:
                state.notes.append("the windows' step caps, from the steps the script had left: " + ", ".join(
                    f"{name} {steps}" for name, steps in windows.caps.items()))
            self.windows_done.set()
            self.handoff.end(RESUME if plan.then == THEN_CONTINUE else STOP)


class _Silent:
    def phase(self, text: str) -> None:
        pass

    def mode(self, name: str, elapsed_s: float, cap_s: float, steps: int) -> None:
        pass


def script_label(script: str | None, module: str | None) -> str:
    return f"-m {module}" if module else os.path.relpath(script)
