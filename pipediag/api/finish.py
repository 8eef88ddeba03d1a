"""What `diagnose()` adds to a concluded Diagnosis: the wall time and where it went (phase by
phase, records.phases), and, under --quick, its shorter windows, what was left out and how to get it."""

from __future__ import annotations

from dataclasses import replace

from pipediag.errors import UsageError
from pipediag.records.phases import PhaseClock
from pipediag.records.run import StopRule
from pipediag.results.diagnose import Diagnosis

QUICK_NOTE = ("--quick: the verdict and the slow stage only, each mode over at most {window}; no fix was measured "
              "(no tuned mode). Run the same command without --quick to measure the fixes")

# --quick's windows: each mode at most QUICK_MAX_SECONDS once it has QUICK_MIN_STEPS (a slower one
# runs on to the rule's own cap until it has them: on 2026-12-03 a hard 3-s cap left real/tf_csv's
# 1.3-batch/s pipeline with 4 steps, inconclusive), its settling warm-up at most 1.5x that; at
# least QUICK_MIN_SECONDS; the sequential stops (verdict.sequential) from QUICK_DECIDE_MIN_SECONDS.
# A reading on a verdict line is still measured again (twice the 3 s).
QUICK_MAX_SECONDS = 3.0
QUICK_MIN_SECONDS = 1.0
QUICK_MIN_STEPS = 10
QUICK_WARMUP_STEPS = 3
QUICK_DECIDE_MIN_SECONDS = 0.5


def quick_modes(modes: tuple[str, ...], quick: bool, thorough: bool) -> tuple[str, ...]:
    """The modes to run: without the tuned mode (and so without the ablation) under --quick."""
    if quick and thorough:
        raise UsageError("--quick and --thorough ask for opposite things", "give one of them")
    return tuple(m for m in modes if m != "tuned") if quick else tuple(modes)


def quick_rule(rule: StopRule) -> StopRule:
    """The stop rule under --quick: `rule` with --quick's shorter windows (never longer than `rule`'s)."""
    return replace(rule, soft_max_seconds=min(rule.usual_seconds, QUICK_MAX_SECONDS),
                   min_seconds=min(rule.min_seconds, QUICK_MIN_SECONDS), min_steps=min(rule.min_steps, QUICK_MIN_STEPS),
                   warmup_steps=min(rule.warmup_steps, QUICK_WARMUP_STEPS),
                   decide_min_seconds=min(rule.decide_min_seconds, QUICK_DECIDE_MIN_SECONDS))


def with_phases(diagnosis: Diagnosis, phases: PhaseClock, elapsed_s: float, *, quick_rule: StopRule | None = None
                ) -> Diagnosis:
    """The diagnosis with its wall time, the phases it went to, and under --quick (`quick_rule`: the
    rule its modes ran by) the setting and its note."""
    settings, notes = diagnosis.settings, diagnosis.notes
    if quick_rule is not None:
        settings, notes = {**settings, "quick": True}, (*notes, QUICK_NOTE.format(window=_window(quick_rule)))
    return replace(diagnosis, elapsed_s=elapsed_s, phases=phases.phases(), settings=settings, notes=notes)


def _window(rule: StopRule) -> str:
    """`3 s (longer, up to 10 s, for a mode with fewer than 10 steps by then)`, or `1 s`."""
    window = f"{rule.usual_seconds:g} s"
    if rule.max_seconds > rule.usual_seconds:
        window += f" (longer, up to {rule.max_seconds:g} s, for a mode with fewer than {rule.min_steps} steps by then)"
    return window
