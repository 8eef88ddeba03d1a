"""The step timings of a real `fit`, from three kinds of event, as plain numbers (no TensorFlow).

For each training step k the monitor records, on one clock:
  t0  the training loop asks for the next batch (`next(iterator)` is called),
  t1  the batch is in hand,
  and the step ends when the loop asks for the following batch, or at a cut: the end of an
  epoch's training steps (validation, epoch-end callbacks and the next epoch's setup are not
  part of any step), the end of fit, or a `next()` that found the data exhausted.

wait = t1 - t0: the time training was blocked on input. rest = end - t1: everything else of the
step — the compiled train step, Keras's loop, every callback's batch hooks, and any device sync
a callback forces (e.g. the progress bar reading the loss). wait + rest tile the epoch's
training time exactly, so steps / sum(wait + rest) is fit's real rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipediag.records.run import ModeRun


@dataclass
class FitSteps:
    warmup_steps: int = 5  # the first steps (tracing and compiling in the first) are not timed
    t0: list[int] = field(default_factory=list)
    t1: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    epoch: list[int] = field(default_factory=list)
    made: list[int] = field(default_factory=list)  # ns the loop spent making the iterator this step is the first of
    current_epoch: int = 0
    pending_made_ns: int = 0  # the last iterator's making, until its first batch
    _open: bool = False

    def fetch_started(self, t0: int) -> None:
        if self._open:
            self.end.append(t0)
            self._open = False
        self.t0.append(t0)

    def fetched(self, t1: int) -> None:
        self.t1.append(t1)
        self.epoch.append(self.current_epoch)
        self.made.append(self.pending_made_ns)
        self.pending_made_ns = 0
        self._open = True

    def fetch_failed(self, t: int) -> None:
        """`next()` raised (data exhausted): the call that started at t0 was no step."""
        self.t0.pop()
        self.cut(t)

    def cut(self, t: int) -> None:
        if self._open:
            self.end.append(t)
            self._open = False

    @property
    def steps(self) -> int:
        """Finished steps (one still running is not counted)."""
        return len(self.end)

    def wait_intervals(self, first: int = 0) -> list[tuple[int, int]]:
        return [(self.t0[k], self.t1[k]) for k in range(first, self.steps) if self.t1[k] > self.t0[k]]

    def windows(self, first: int = 0) -> list[tuple[int, int]]:
        """Per epoch, [start of its first step, end of its last step] from step `first` on."""
        out: dict[int, list[int]] = {}
        for k in range(first, self.steps):
            lo_hi = out.setdefault(self.epoch[k], [self.t0[k], self.end[k]])
            lo_hi[1] = self.end[k]
        return [(lo, hi) for lo, hi in out.values()]

    def mode_run(self, stop_reason: str, warmup_steps: int | None = None) -> ModeRun | None:
        """The timed steps as a `pipeline` ModeRun, or None before the first timed step ends.

        `start_ns`/`end_ns` span all timed steps; when the fit had several epochs the time between
        them is inside that span but in no step (the run's notes say so). `warmup_steps`: more
        steps than the fixed warm-up left out (an early part whose rate differs, run.observe)."""
        n, w = self.steps, self.warmup_steps if warmup_steps is None else max(warmup_steps, self.warmup_steps)
        if n <= w:
            return None
        epochs = sorted(set(self.epoch[w:n]))
        notes = [f"measured inside model.fit by pipediag.keras.InputMonitor: {n - w} steps over {len(epochs)} epoch(s) "
                 f"after {w} warm-up step(s)"]
        if len(epochs) > 1:
            notes.append("the time between epochs (validation, epoch-end callbacks) lies between start_ns and end_ns "
                         "but in no step")
        return ModeRun(
            name="pipeline",
            start_ns=self.t0[w],
            end_ns=self.end[n - 1],
            wait_ns=tuple(self.t1[k] - self.t0[k] for k in range(w, n)),
            compute_ns=tuple(self.end[k] - self.t1[k] for k in range(w, n)),
            first_step_ns=self.end[0] - self.t0[0],
            warmup_steps=w,
            warmup_ns=self.t0[w] - self.t0[0],
            stop_reason=stop_reason,
            notes=tuple(notes),
        )

    def epoch_numbers(self, epoch: int) -> tuple[int, int, int, tuple[int, int]] | None:
        """(steps, total wait ns, total ns, (start, end)) of one epoch's finished steps, warm-up
        excluded; None when it has none."""
        ks = [k for k in range(self.warmup_steps, self.steps) if self.epoch[k] == epoch]
        if not ks:
            return None
        wait = sum(self.t1[k] - self.t0[k] for k in ks)
        total = sum(self.end[k] - self.t0[k] for k in ks)
        return len(ks), wait, total, (self.t0[ks[0]], self.end[ks[-1]])
