"""Where a diagnosis's wall time went, phase by phase: the record the JSON and the reports carry,
and the accumulator that fills it (the clock is passed in).

A phase is summed over every time it ran (two synthetic runs, near a threshold, are one entry).
The modes' warm-ups are one phase of their own, apart from the modes' measured windows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pipediag.records.record import DictRecord

# The phases in the order a diagnosis runs them; a phase that did not run is absent.
PHASE_LABELS = {
    "setup": "setup",  # the environment, the builder called, the step built
    "first_batch": "first batch",
    "warmup": "warm-up",
    "synthetic": "synthetic",
    "pipeline": "pipeline",
    "input_only": "input_only",
    "handover": "hand-over",
    "anatomy": "anatomy",
    "remeasure": "re-measure",  # synthetic and pipeline again, near a threshold
    "compiled_step": "step in tf.function",  # an eager step wrapped in tf.function (api.gather.compiled_step)
    "tuning_plan": "tuning plan",
    "variant_builds": "variant builds",  # the tuned variants' graphs rebuilt, caches filled, outputs checked
    "control": "control",
    "tuned": "tuned",
    "ablation": "ablation",
    "conclude": "verdict and fixes",
}


def mode_phase(mode: str, enclosing: str | None) -> str:
    """The phase a mode's run is booked to: its own, "control" for the control runs, "ablation"
    for a change alone or all but one, "remeasure" for the runs repeated near a threshold,
    "handover" for the ready batch handed over beside the step, and "compiled_step" for an eager
    step wrapped in tf.function."""
    if enclosing in ("remeasure", "handover", "compiled_step"):
        return enclosing
    if mode.startswith("control"):
        return "control"
    return mode if mode in ("synthetic", "pipeline", "input_only", "tuned") else "ablation"


@dataclass(frozen=True)
class Phase(DictRecord):
    name: str  # a key of PHASE_LABELS
    seconds: float

    @property
    def label(self) -> str:
        return PHASE_LABELS.get(self.name, self.name)


def phases_text(phases: tuple[Phase, ...], elapsed_s: float, startup_s: float | None = None) -> str:
    """`time: 19.8 s — setup 1.2, first batch 0.3, warm-up 2.1, synthetic 4.0, ...`: phases of
    0.05 s or more, in the order they ran, then what no phase accounts for, then (`startup_s`,
    when known) the command's start-up before the diagnosis."""
    shown = [p for p in phases if p.seconds >= 0.05]
    text = f"time: {elapsed_s:.1f} s"
    if shown:
        text += " — " + ", ".join(f"{p.label} {p.seconds:.1f}" for p in shown)
    rest = elapsed_s - sum(p.seconds for p in phases)
    if shown and rest >= 0.05:
        text += f", other {rest:.1f}"
    if startup_s is not None:
        text += f"; before it, start-up {startup_s:.1f} s (Python, imports, your module)"
    return text


class PhaseClock:
    """Sums wall time per phase. `with clock.phase("anatomy"):` times a block; a phase timed
    inside another is taken out of the outer one (each second is booked once). `move` books part
    of a phase to another (a mode's warm-up, which its run measured)."""

    def __init__(self, clock_ns: Callable[[], int] = time.monotonic_ns):
        self.clock_ns = clock_ns
        self.ns: dict[str, int] = {}
        self._inner_ns: list[int] = []  # per open phase: the time its inner phases took
        self._open: list[str] = []

    @property
    def current(self) -> str | None:
        """The innermost phase open now."""
        return self._open[-1] if self._open else None

    def add(self, name: str, ns: int) -> None:
        self.ns[name] = self.ns.get(name, 0) + max(0, int(ns))

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = self.clock_ns()
        self._inner_ns.append(0)
        self._open.append(name)
        try:
            yield
        finally:
            took = self.clock_ns() - start
            self._open.pop()
            inner = self._inner_ns.pop()
            self.add(name, took - inner)
            if self._inner_ns:
                self._inner_ns[-1] += took

    def move(self, source: str, target: str, ns: int) -> None:
        """Book `ns` of what was timed as `source` to `target` instead."""
        ns = min(max(0, int(ns)), self.ns.get(source, 0))
        self.ns[source] = self.ns.get(source, 0) - ns
        self.add(target, ns)

    def phases(self) -> tuple[Phase, ...]:
        order = list(PHASE_LABELS)
        names = sorted(self.ns, key=lambda n: order.index(n) if n in order else len(order))
        return tuple(Phase(name, round(self.ns[name] / 1e9, 3)) for name in names)
