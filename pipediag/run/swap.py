"""The counterfactual windows inside the user's own loop: the loop is inverted, so diagnose's
own machinery (api.gather: run_mode, the input-only mode, the anatomy, the tuned rewrite with its
ablation and checks) runs unchanged, with the user's loop as its step.

The windows run in a controller thread. Its step is `Handoff.step(batch)`: the batch goes to the
loop's pending request for a batch (the loop is blocked in the tap's `__next__`), and the step
returns when the loop asks for its next batch, that is when the user's own step, callbacks and
logging are done. While no step is asked for (the input-only mode, the anatomy, a cache fill) the
loop stays paused inside its request. When the windows end, the loop gets "resume" (the real
iterator again, where it was) or "stop". What the loop does between a step and its next request
that is no step (Keras' validation pass and epoch end, which the fit hook marks: `Handoff.pause`)
is kept out of the window's step times and time cap (`Handoff.paused_ns`): a 75-step fit whose
epochs end with seconds of validation gave its synthetic window 7 steps in its 10 s, and no verdict.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pipediag.api.gather import DiagnoseRun, Gathering, Plan
from pipediag.modes.feeds import FIRST_BATCHES_KEPT, BatchFeed
from pipediag.records.options import RunOptions
from pipediag.records.run import ModeRun, StopRule
from pipediag.records.step import StepInfo
from pipediag.run.budget import OutOfSteps, capped, window_steps
from pipediag.samples.sampler import Sampler
from pipediag.steps.step import Observed, Step

BATCH, RESUME, STOP = "batch", "resume", "stop"


class LoopGone(KeyboardInterrupt):
    """The script stopped asking for batches during a window (it ended, raised, or was
    interrupted). A KeyboardInterrupt, so the mode running keeps what it measured, as on Ctrl-C."""


class Handoff:
    """The two ends of the inverted loop (SimpleQueues: C code that a signal interrupts cleanly)."""

    def __init__(self, clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self._to_loop: queue.SimpleQueue = queue.SimpleQueue()
        self._from_loop: queue.SimpleQueue = queue.SimpleQueue()
        self.gone = threading.Event()
        self.steps = 0
        self._clock_ns = clock_ns
        self._lock = threading.Lock()
        self._paused_ns = 0
        self._paused_since: int | None = None

    # the loop's side (the main thread, inside a tap's __next__)
    def request(self, step_done: bool) -> tuple[str, Any]:
        """The loop asks for a batch; `step_done`: its previous (window) step ends here."""
        self._unpause()
        if step_done:
            self._from_loop.put(True)
        return self._to_loop.get()

    def pause(self) -> None:
        """The loop's step is over, but the loop does something that is no step before its next
        request (Keras' validation, an epoch's end): that time, until the request, is paused."""
        with self._lock:
            if self._paused_since is None:
                self._paused_since = self._clock_ns()

    def _unpause(self) -> None:
        with self._lock:
            if self._paused_since is not None:
                self._paused_ns += self._clock_ns() - self._paused_since
                self._paused_since = None

    def paused_ns(self) -> int:
        """The loop's paused time so far (the modes' Step.paused_ns), a pause under way included."""
        with self._lock:
            ongoing = 0 if self._paused_since is None else self._clock_ns() - self._paused_since
            return self._paused_ns + ongoing

    def loop_gone(self) -> None:
        self.gone.set()
        self._from_loop.put(False)

    # the controller's side
    def step(self, batch: Any) -> None:
        if self.gone.is_set():
            raise LoopGone
        self._to_loop.put((BATCH, batch))
        if not self._from_loop.get():
            raise LoopGone
        self.steps += 1

    def end(self, command: str) -> None:
        self._to_loop.put((command, None))


def loop_step(handoff: Handoff, description: str, batch_format: str, framework: str) -> Step:
    """The user's loop as the modes' step: it returns when the loop asks for its next batch."""
    return Step(run=handoff.step,
                info=StepInfo(kind="script_loop", description=description, batch_format=batch_format),
                observed=lambda: Observed(framework, "the loop's next request for a batch"),
                paused_ns=handoff.paused_ns)


class Windows(Gathering):
    """Synthetic, input-only and tuned windows (with the anatomy) for the training dataset
    `source`, its loop fed through `handoff`. The pipeline mode is the observed steps, already in
    `state.runs`."""

    def __init__(self, state: DiagnoseRun, sampler: Sampler, options: RunOptions, plan: Plan, progress, watchdog,
                 source, handoff: Handoff, steps_left=lambda: None):
        super().__init__(state, sampler, options, plan, progress, watchdog)
        self.source, self.handoff, self.steps_left = source, handoff, steps_left
        self.caps: dict[str, int] = {}  # the step caps the script's steps set on the windows
        self.plain_read = None  # analysis.modes.ModeSummary: a distributed loop's pipeline alone, plain iterator

    def run(self, builder=None) -> None:
        self.prepare_windows()
        try:
            self.measure_synthetic()
        except OutOfSteps as short:
            self.state.notes.insert(0, f"the synthetic window was not run: the script had {short.left} step(s) left on "
                                       f"its training dataset, a window needs {short.needed}: no verdict")
            self.state.interrupted = True
            return
        self.take_reference()
        if "input_only" in self.plan.modes:
            self.feeds["input_only"] = self.input_feed()
            try:
                self.measure("input_only", self.paused_feed(self.feeds["input_only"]), False)
            finally:
                self.feeds["input_only"].close()
            if self.source.distributed:
                self.state.notes.append(
                    f"your loop takes its batches from {self.source.iterator_text()}: the input_only window and the "
                    "hand-over were read through one of the same kind, so its cost per batch is in both")
                self.distributed_cost()
        if self.source.batch_format in ("tf", "keras-jax"):
            self.handover()
            self.with_plain_read()
        if self.plan.anatomy and self.graph is not None and "input_only" in self.plan.modes:
            self.anatomy()
        if "tuned" in self.plan.modes and self.graph is not None:
            self.tuned()

    def distributed_cost(self) -> None:
        """The pipeline alone once more, through a plain tf.data iterator (not recorded as a mode):
        what the loop's distributed iterator adds to every batch, said in a note."""
        from pipediag.analysis.handover import distributed_iterator_text
        from pipediag.analysis.modes import summarize

        feed = BatchFeed(self.dataset, "tf")
        try:
            plain = self.measure("input_only", self.paused_feed(feed), False, record=False)
        finally:
            feed.close()
        log = self.sampler.log()
        through = summarize(self.state.runs["input_only"], log).batches_per_sec
        pipeline = self.state.runs.get("pipeline")
        loop = summarize(pipeline, log) if pipeline is not None else None
        wait_ms = None if loop is None or not loop.batches_per_sec or loop.input_wait_frac is None \
            else loop.input_wait_frac * 1e3 / loop.batches_per_sec
        self.plain_read = summarize(plain, log)
        text = distributed_iterator_text(through, self.plain_read.batches_per_sec, self.source.iterator_text(), wait_ms)
        if text is not None:
            self.state.notes.append(text)

    def with_plain_read(self) -> None:
        """The hand-over gets the pipeline alone read through a plain iterator, where it was read:
        the verdict's hand-over edge tells the distributed iterator's cost from the pipeline's by it."""
        plain = self.plain_read
        if plain is None or self.state.handover is None or not plain.batches_per_sec:
            return
        self.state.handover = replace(self.state.handover, plain_batches_per_sec=plain.batches_per_sec,
                                      plain_batches_per_sec_ci=plain.batches_per_sec_ci,
                                      partial_batches=self.partial_batches())

    def partial_batches(self) -> bool | None:
        """Whether the loop's own next() on its distributed iterator takes TensorFlow's partial-batch
        path. Not asked for fit: Keras reads its iterator inside the compiled train function."""
        from pipediag.modes.distributed import partial_batch_handling
        from pipediag.run.observe import DISTRIBUTED, FROM_FUNCTION

        if self.source.kind not in (DISTRIBUTED, FROM_FUNCTION):
            return None
        return partial_batch_handling(self.source.dataset, self.source.strategy)

    def measure(self, name: str, next_batch, with_step: bool, mode_rule: StopRule | None = None,
                record: bool = True, **kw) -> ModeRun:
        """A window; one that runs the step takes at most its share of the steps the script has left
        (run.budget), so that it ends before the script does."""
        left = self.steps_left() if with_step else None
        if left is not None:
            # the synthetic window keeps half for the tuned windows; a variant keeps half for the next
            windows_left = 1 if name == "tuned" or (name == "synthetic" and "tuned" not in self.plan.modes) else 2
            try:
                steps = window_steps(left, mode_rule or self.rule, windows_left, f"{name} window")
            except OutOfSteps:
                self.close_feed(name, next_batch, False)
                raise
            mode_rule = capped(mode_rule or self.rule, steps)
            self.caps[name] = steps
        return super().measure(name, next_batch, with_step, mode_rule, record, **kw)

    def handover_beside_step(self) -> None:
        """As diagnose's, in a window of the script's own steps; a script with too few left keeps
        the reading taken with nothing between the calls, and a note says why."""
        try:
            super().handover_beside_step()
        except OutOfSteps as short:
            self.state.notes.append(f"the hand-over was not timed beside the step: the script had {short.left} "
                                    f"step(s) left on its training dataset, a window needs {short.needed}")

    def tuned(self) -> None:
        try:
            super().tuned()
        except OutOfSteps as short:
            self.state.notes.append(f"the tuned windows stopped at {short.window}: the script had {short.left} step(s) "
                                    f"left on its training dataset, a window needs {short.needed}; the variants "
                                    "measured before it are kept")

    def prepare_windows(self) -> None:
        """The training dataset's graph, stages and first batch (a fresh iterator of it, read
        while the loop is paused: the loop's own iterator is not touched)."""
        from pipediag.builder.prepare import prepare_dataset
        from pipediag.records.stall import Stalled
        from pipediag.steps.device_memory import DeviceMemory

        source, state = self.source, self.state
        try:
            prepared = prepare_dataset(source.dataset, {}, None, True, 0, clock_ns=self.clock_ns,
                                       phase=self.progress.phase, who=f"the dataset built at {source.where()}",
                                       guard=self.watchdog.call)
        except Stalled as stall:
            self.graph, self.dataset = getattr(stall, "graph", None), source.dataset
            raise self.stalled("first batch", stall) from None
        self.prepared, self.dataset, self.graph = prepared, prepared.dataset, prepared.graph
        state.notes.extend(prepared.notes)
        state.stages, state.cardinality, state.element = prepared.stages, prepared.cardinality, prepared.element
        state.first_batch_ms = source.first_batch_ms
        self.first_batch = prepared.first_batch
        self.step = loop_step(self.handoff, source.step_description(), source.batch_format, source.framework)
        state.step = self.step
        self.memory = DeviceMemory(lambda: source.framework)

    def take_reference(self) -> None:
        """The original pipeline's first batches as the loop receives them, for the tuned checks."""
        feed = self.step_feed(self.dataset)
        try:
            for _ in range(FIRST_BATCHES_KEPT):
                feed()
        finally:
            feed.close()
        self.feeds["pipeline"] = feed

    def paused_feed(self, feed):
        """A feed that ends its mode (as Ctrl-C does) once the script is gone."""
        gone = self.handoff.gone

        def next_batch() -> Any:
            if gone.is_set():
                raise LoopGone
            return feed()

        return next_batch

    def step_feed(self, data, keep_first: int | None = None):
        return self.source.feed(data) if keep_first is None else self.source.feed(data, keep_first)

    def handover_through(self) -> str | None:
        return self.source.iterator_text()

    def input_feed(self):
        """The input_only window's feed: the pipeline alone, as the loop receives it when that is
        through a distributed iterator (whose per-call cost the loop pays whatever the pipeline;
        benchmarks/distributed_next.py), else its plain tf.data iterator."""
        if self.source.distributed:
            return self.source.feed(self.dataset)
        return BatchFeed(self.dataset, "tf")

    def free_input(self):
        """One real batch, as the loop received it, handed out again and again."""
        from pipediag.modes.feeds import constant_feed

        batch = self.source.last_batch
        if self.source.batch_format == "tf" and not self.source.distributed:
            return constant_feed(batch, "tf")  # on the accelerator when there is one, as diagnose holds it
        return lambda: batch


def window_rule(rule, seconds: float | None):
    """The windows' stop rule with --window-seconds as its cap."""
    if seconds is None:
        return rule
    return replace(rule, max_seconds=seconds, min_seconds=min(rule.min_seconds, seconds / 2))
