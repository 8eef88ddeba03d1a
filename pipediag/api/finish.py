"""What `diagnose()` adds to a concluded Diagnosis: the wall time and where it went (phase by
phase, records.phases), and, under --quick, what was left out and how to get it."""

from __future__ import annotations

from dataclasses import replace

from pipediag.errors import UsageError
from pipediag.records.phases import PhaseClock
from pipediag.results.diagnose import Diagnosis

QUICK_NOTE = ("--quick: the verdict and the slow stage only; no fix was measured (no tuned mode). Run the same "
              "command without --quick to measure the fixes")


def quick_modes(modes: tuple[str, ...], quick: bool, thorough: bool) -> tuple[str, ...]:
    """The modes to run: without the tuned mode (and so without the ablation) under --quick."""
    if quick and thorough:
        raise UsageError("--quick and --thorough ask for opposite things", "give one of them")
    return tuple(m for m in modes if m != "tuned") if quick else tuple(modes)


def with_phases(diagnosis: Diagnosis, phases: PhaseClock, elapsed_s: float, *, quick: bool = False) -> Diagnosis:
    """The diagnosis with its wall time, the phases it went to, and under --quick the setting and its note."""
    settings, notes = diagnosis.settings, diagnosis.notes
    if quick:
        settings, notes = {**settings, "quick": True}, (*notes, QUICK_NOTE)
    return replace(diagnosis, elapsed_s=elapsed_s, phases=phases.phases(), settings=settings, notes=notes)
