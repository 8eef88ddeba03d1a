"""The datasets a script iterates, and the timing of its real steps.

Each dataset the script iterates (or gives `fit`) is a `Source`. Every batch its loop takes goes
through `Source.observe`, which times it as `callbacks.fit_steps` times a fit: the wait for the
batch (t0..t1) and the rest of the step, up to the loop's next request. A step ends early at a
cut: the iterator's end, another dataset's iterator made (a validation loop), a fit's validation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pipediag.analysis.epoch_starts import EpochStarts, split_epoch_starts, without
from pipediag.callbacks.fit_steps import FitSteps
from pipediag.modes.distributed import DistributedFeed, iterator_text
from pipediag.modes.feeds import FIRST_BATCHES_KEPT, BatchFeed
from pipediag.modes.runner import is_stable
from pipediag.modes.warmup import FILL_PROJECTION_AFTER_S
from pipediag.records.run import ModeRun, StopRule
from pipediag.run.site import Site

LOOP, DISTRIBUTED, FROM_FUNCTION, FIT = "loop", "distributed", "from_function", "fit"

# The epoch starts' remedy in words, for the notes (from 5% of the time it is also a fix: fixes.epoch_starts)
START_FIX_NOTE = ("what removes it: one iterator kept across epochs (`it = iter(dataset.repeat())` made once, and "
                  "`next(it)` a known number of steps per epoch; in fit, `dataset.repeat()` with `steps_per_epoch`), "
                  "or a smaller shuffle buffer (a shuffle refills its whole buffer at each start), with its files or "
                  "elements shuffled first; not measured by pipediag run")


@dataclass(eq=False)
class Source:
    """One dataset the script iterated: how its loop receives batches, and what was timed."""

    dataset: Any
    number: int  # 1, 2, ... in the order the script first iterated them
    site: Site | None
    kind: str = LOOP  # LOOP | DISTRIBUTED | FROM_FUNCTION | FIT
    batch_format: str = "tf"  # what the loop receives: "tf" values, or "keras-jax" (NumPy, fit on JAX)
    framework: str = "tensorflow"
    strategy: Any = None  # the tf.distribute strategy the loop's batches come through (None: plain)
    model_name: str | None = None  # fit: the model's name
    warmup_steps: int = 5
    taken: int = 0  # batches the script took from it (all phases)
    iterators: int = 0
    last_batch: Any = None  # the last real batch, as the loop received it (the synthetic window's batch)
    first_batch_ms: float | None = None
    steps: FitSteps = field(init=False)
    after: FitSteps = field(init=False)  # steps after the windows (--then continue)

    def __post_init__(self) -> None:
        self.steps = FitSteps(warmup_steps=self.warmup_steps)
        self.after = FitSteps(warmup_steps=0)
        self._checked = 0
        self.settled_from: int | None = None  # the steps before it left out: the rate after it was stable
        self.cache_pass: int | None = None  # batches in the first pass of a dataset that caches; 0: none, None: not asked
        self.cache_gave_up_s: float | None = None  # that pass's projected seconds, when too long to wait for
        self.starts_found: EpochStarts | None = None  # the epoch starts inside the observed steps and their cost

    @property
    def distributed(self) -> bool:
        return self.strategy is not None

    def where(self) -> str:
        return self.site.text() if self.site is not None else "a place pipediag could not see"

    def name(self) -> str:
        return f"dataset {self.number} (built at {self.where()})"

    def step_description(self) -> str:
        if self.kind == FIT:
            return f"your own model.fit of '{self.model_name}', fed through pipediag run's hook on its train function"
        how = {DISTRIBUTED: " through strategy.experimental_distribute_dataset",
               FROM_FUNCTION: " through strategy.distribute_datasets_from_function"}.get(self.kind, "")
        return f"your script's own training loop over {self.name()}{how}"

    def feed(self, data: Any, keep_first: int = FIRST_BATCHES_KEPT):
        """A feed of `data`'s batches as this loop receives them (a BatchFeed: firsts, close)."""
        if self.kind == FROM_FUNCTION:
            return FromFunctionFeed(data, self.strategy, keep_first=keep_first)
        if self.strategy is not None:
            return DistributedFeed(data, self.strategy, keep_first=keep_first)
        return BatchFeed(data, self.batch_format, keep_first=keep_first)

    def iterator_text(self) -> str | None:
        """The distributed iterator this loop's batches come through, in words; None: a plain one."""
        if self.strategy is None:
            return None
        return iterator_text(self.strategy, "distribute_datasets_from_function" if self.kind == FROM_FUNCTION
                             else "experimental_distribute_dataset")

    # -- timing the real steps ---------------------------------------------------------------
    def observe(self, steps: FitSteps, real_next: Callable[[], Any], clock_ns: Callable[[], int]) -> Any:
        """One real batch, timed into `steps` (whose open step ended before this call)."""
        t0 = clock_ns()
        steps.fetch_started(t0)
        try:
            batch = real_next()
        except BaseException:  # the end of the data, an error in the pipeline, Ctrl-C: no step
            steps.fetch_failed(clock_ns())
            raise
        t1 = clock_ns()
        steps.fetched(t1)
        if self.first_batch_ms is None:
            self.first_batch_ms = (t1 - t0) / 1e6
        self.taken += 1
        self.last_batch = batch
        return batch

    def enough(self, rule: StopRule, observe_steps: int | None, now_ns: int) -> str | None:
        """Whether the observed steps (warm-up left out) pin the rate down, as the stop reason of
        the pipeline mode they make: `observe_steps` of them when given ("max_steps"), else as a
        mode's stop rule says ("stable", or "time_cap"); None: not yet."""
        steps = self.steps
        n = steps.steps - steps.warmup_steps
        if n <= 0:
            return None
        if observe_steps is not None:
            return "max_steps" if n >= observe_steps else None
        if self.filling_cache(now_ns, rule):
            return None
        w = max(steps.warmup_steps, self.cache_pass or 0)  # a filled cache: its first pass is warm-up
        n = steps.steps - w
        if n <= 0:
            return None
        elapsed_s = (now_ns - steps.t0[w]) / 1e9
        if elapsed_s >= rule.max_seconds:
            return "time_cap"
        if n >= rule.max_steps:
            return "max_steps"
        if n < rule.min_steps or elapsed_s < rule.min_seconds or n < self._checked * 1.125:
            return None
        self._checked = n
        step_ns = [steps.end[k] - steps.t0[k] for k in range(w, steps.steps)]
        if is_stable(step_ns, rule.rel_half_width, rule.mean_rel_half_width):
            return "stable"
        # Not stable over all the steps, maybe because an early part ran at another rate (a first
        # epoch that fills a cache: the TF text-classification tutorial ended after 2,510 steps
        # without a stable rate). The later half alone, stable and long enough, is the steady rate.
        half = w + n // 2
        late_s = (now_ns - steps.t0[half]) / 1e9
        if n - n // 2 >= rule.min_steps and late_s >= rule.min_seconds and is_stable(
                step_ns[n // 2:], rule.rel_half_width, rule.mean_rel_half_width):
            self.settled_from = half
            return "stable"
        return None

    def filling_cache(self, now_ns: int, rule: StopRule) -> bool:
        """True while the script's first pass over a dataset that caches is still filling the cache
        (as diagnose's warm-up waits for it: modes.warmup.CacheFilled): the epochs after it read
        from memory, and they are the job's steady state. A pass projected past the warm-up cap
        (`rule.warmup_max_seconds`) is not waited for; the note says the rate is the first pass's.
        The projection leaves the first step apart: it traces and compiles the train function (1.25 s
        of a 30-ms step under MirroredStrategy on 2 cores, the TF distributed-Keras tutorial: counted
        as one of the pass's steps, it projected 35 s for a 14-s pass, past the 30-s cap)."""
        if self.cache_pass is None:
            self.cache_pass = cache_pass_batches_of(self.dataset) or 0
        steps = self.steps
        if not self.cache_pass or steps.steps > self.cache_pass:
            return False
        elapsed_s = (now_ns - steps.t0[0]) / 1e9
        if elapsed_s >= FILL_PROJECTION_AFTER_S and steps.steps >= 3:
            first_s = (steps.end[0] - steps.t0[0]) / 1e9
            later_s = (now_ns - steps.end[0]) / 1e9
            projected_s = first_s + later_s * (self.cache_pass - 1) / (steps.steps - 1)
            if projected_s > rule.warmup_max_seconds:
                self.cache_gave_up_s, self.cache_pass = projected_s, 0
                return False
        return True

    def pipeline_run(self, stop_reason: str) -> ModeRun | None:
        """The observed steps as the pipeline mode: the user's own loop on the user's pipeline."""
        run = self.steps.mode_run(stop_reason, self.settled_from or self.cache_pass or None)
        if run is None:
            return None
        n = run.steps
        note = (f"measured in your script's own loop by pipediag run: {n} steps of {self.name()} after "
                f"{run.warmup_steps} warm-up step(s); the wait is the time the loop waited for each batch, the "
                "rest of the step is everything until it asked for the next one")
        notes = (note,) + run.notes[1:]
        if self.cache_pass:
            notes += (f"your dataset caches: its first pass ({self.cache_pass} batches) filled the cache and is left "
                      "out as warm-up, so the pipeline mode is the cached epochs, as every epoch after the first runs",)
        elif self.cache_gave_up_s is not None:
            notes += (f"your dataset caches, but its first pass would take about {self.cache_gave_up_s:.0f} s: the "
                      "pipeline mode is that first, uncached pass; the epochs after it read from the cache",)
        run, start_notes = self.apart_from_epoch_starts(run)
        notes += start_notes
        if self.settled_from is not None:
            left_out = self.settled_from - self.steps.warmup_steps
            notes += (f"the rate over all observed steps was not stable, over the later {n} it was: the first "
                      f"{left_out} (after the fixed warm-up) ran at another rate, such as a first epoch filling a "
                      "cache, and are left out as warm-up",)
        return replace(run, notes=notes)

    def apart_from_epoch_starts(self, run: ModeRun) -> tuple[ModeRun, tuple[str, ...]]:
        """The observed steps without the wait at each epoch's start (analysis.epoch_starts), when
        there is one: the verdict is decided on the steady state, the start cost is its own finding."""
        steps, w = self.steps, run.warmup_steps
        epochs = steps.epoch[w:w + run.steps]
        found = split_epoch_starts(run.wait_ns, run.step_ns, epochs, earlier_epoch=steps.epoch[:w],
                                   made_ns=steps.made[w:w + run.steps])
        self.starts_found = found
        if not found.found:
            if found.starts:
                return run, (f"{found.starts} epoch start(s) (a new iterator) inside the observed steps: their first "
                             "steps waited no longer than the others",)
            return run, ()
        kept = replace(run, wait_ns=without(run.wait_ns, found.start_steps),
                       compute_ns=without(run.compute_ns, found.start_steps))
        return kept, (found.text() + f"; those {len(found.start_steps)} start step(s) are left out of the pipeline "
                      "mode", START_FIX_NOTE)

    @property
    def epoch_starts(self) -> dict | None:
        """The epoch starts as the JSON's `settings.epoch_starts` (None before the observation ended)."""
        found = self.starts_found
        if found is None:
            return None
        d = {"starts": found.starts, "found": found.found, "wait_per_start_ms": round(found.wait_per_start_ns / 1e6, 3),
             "share": round(found.share, 4), "steps_per_epoch": found.steps_per_epoch,
             "steady_wait_median_ms": round(found.steady_wait_median_ns / 1e6, 3)}
        return {**d, "text": found.text(), "fix": START_FIX_NOTE} if found.found else d

    def after_text(self) -> str | None:
        """The steps after the windows (--then continue), in a sentence."""
        after = self.after
        n = after.steps
        if n == 0:
            return None
        wait = sum(after.t1[k] - after.t0[k] for k in range(n))
        total = sum(after.end[k] - after.t0[k] for k in range(n))
        share = f"{100 * wait / total:.0f}%" if total else "unknown"
        return (f"after the windows your loop went on with the real pipeline for {n} step(s): the input wait was "
                f"{share} of their time")



def cache_pass_batches_of(dataset: Any) -> int | None:
    """Batches in one pass of `dataset` when it caches and is finite (a loop that iterates it once
    an epoch, or fit's epochs): its cardinality. None when it does not cache (read from its Python
    Dataset objects' `_input_dataset` chain, private names: not found is None), or its length is
    infinite or unknown."""
    from pipediag.backends.tf import tf

    node, depth = dataset, 0
    while node is not None and depth < 500 and type(node).__name__ != "CacheDataset":
        node, depth = getattr(node, "_input_dataset", None), depth + 1
    if node is None or depth >= 500:
        return None
    try:
        length = int(dataset.cardinality())
    except (AttributeError, TypeError, ValueError, tf.errors.OpError):
        return None
    return length if length > 0 else None


class FromFunctionFeed(DistributedFeed):
    """Each input worker's dataset is `dataset` itself, as distribute_datasets_from_function makes it."""

    def _new(self):
        dataset = self.dataset
        return iter(self.strategy.distribute_datasets_from_function(lambda context: dataset))
