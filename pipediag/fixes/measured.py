"""What the tuned mode and its ablation measured of each applied change (alone, on top of the others, all
together), and whether a speedup is believed as a gain (gain_doubt)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pipediag.analysis.ablation import (
    Ablation,
    ChangeEffect,
    Unsettled,
    classify,
    free_input_runs,
    own_run,
    unsettled,
)
from pipediag.analysis.modes import ModeSummary, Ratio, rate_ratio
from pipediag.records.change import Change
from pipediag.records.verdict import Verdict

if TYPE_CHECKING:
    from pipediag.fixes.recommend import Fix


def without_ratio(effect: ChangeEffect) -> Ratio | None:
    if effect.without_speedup is None:
        return None
    low, high = effect.without_ci if effect.without_ci is not None else (None, None)
    return Ratio(effect.without_speedup, low, high)


@dataclass
class Measured:
    """What the tuned mode and its ablation measured of the applied changes, and the gains withheld."""

    applied: list[Change]
    together: Ratio | None  # the tuned mode against its baseline (the control run): all applied changes together
    together_gain: bool
    effects: dict[str, ChangeEffect | None]
    gains: list[Change]  # changes that gained alone
    on_top: list[Change]  # changes that gained only on top of the others
    withheld: list[str]
    # changes whose answer depends on which control run is believed (analysis.ablation.unsettled),
    # each with the text that says so: offered unmeasured, not called "without a gain"
    unsettled: list[tuple[Change, str]] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        return bool(self.gains) or bool(self.on_top) or self.together_gain


def measure_changes(verdict: Verdict, modes: dict[str, ModeSummary | None], changes: list[Change],
             ablation: Ablation | None) -> Measured:
    """The applied changes' measured gains (alone, on top of the others, or together), each held to
    gain_doubt; a gain in doubt is withheld with its reason."""
    tuned = modes.get("tuned")
    applied = [c for c in changes if c.applied]
    together = together_ratio(modes, ablation)
    # With nothing applied the tuned mode is the user's graph rebuilt: a "gain" there is drift
    # between two runs of the same pipeline (seen on the H200: 1.34x), never a fix.
    together_gain = bool(applied) and classify(together) == "gain"
    effects = {c.key: ablation.effect(c.key) for c in applied} if ablation is not None else {}
    gains = [c for c in applied if effects.get(c.key) is not None and effects[c.key].effect == "gain"
             and effects[c.key].basis == "alone"]
    # A change that gains nothing alone may still matter on top of the others (a prefetch once
    # the map is parallel): the together run against the run without it says so.
    on_top = [c for c in applied if c not in gains and effects.get(c.key) is not None
              and classify(without_ratio(effects[c.key])) == "gain"]
    withheld: list[str] = []
    if ablation is not None:
        gains, dropped = _believed(gains, lambda c: _alone_rate(ablation, c.key), verdict, modes, ablation)
        withheld += [f"{change_text(c)} ran {effects[c.key].speedup:.2f}x the original alone, not taken as a gain: {why}"
                     for c, why in dropped]
        on_top, dropped = _believed(on_top, lambda c: _together_rate(ablation, tuned), verdict, modes, ablation)
        withheld += [f"{change_text(c)}: all changes together ran {effects[c.key].without_speedup:.2f}x the run without it, "
                     f"not taken as a gain: {why}" for c, why in dropped]
    if together_gain:
        why = gain_doubt(tuned.batches_per_sec, tuned.batches_per_sec_ci, verdict, modes, ablation)
        if why is not None:
            together_gain = False
            if not withheld:  # else the changes' own lines above already say it
                withheld.append(f"the tuned pipeline ran {together.value:.2f}x the original, not taken as a gain: "
                                f"{why}")
    open_changes = _unsettled(ablation, applied, gains + on_top, verdict, modes) if not together_gain else []
    return Measured(applied, together, together_gain, effects, gains, on_top, withheld, open_changes)


def _unsettled(ablation: Ablation | None, applied: list[Change], taken: list[Change], verdict: Verdict,
               modes: dict[str, ModeSummary | None]) -> list[tuple[Change, str]]:
    """The applied changes not taken as gains whose answer the control runs' own drift leaves open
    (analysis.ablation.unsettled), unless gain_doubt explains their speedup away (a run faster
    than free input, a compute-bound step)."""
    if ablation is None:
        return []
    found = []
    for u in unsettled(ablation):
        change = next((c for c in applied if c.key == u.change and c not in taken), None)
        if change is None:
            continue
        rate, ci = _alone_rate(ablation, change.key)
        if gain_doubt(rate, ci, verdict, modes, ablation) is None:
            found.append((change, unsettled_text(u)))
    return found


def unsettled_text(u: Unsettled) -> str:
    return (f"not settled: against each control run it ran {min(u.speedups):.2f}-{max(u.speedups):.2f}x the original, "
            f"a gain against one, and the control runs themselves (the original, unchanged) ran "
            f"{min(u.control_rates):.1f} to {max(u.control_rates):.1f} batches/s, their 95% intervals apart: the "
            "machine's speed moved by as much as this change could gain, so the measurement does not say whether "
            "it helps; confirm with `pipediag compare` (interleaved turns against the original)")


def together_ratio(modes: dict[str, ModeSummary | None], ablation: Ablation | None) -> Ratio | None:
    """The tuned mode's speedup: against the control run (the user's graph rebuilt unchanged, run
    next to it) where one ran, since a rebuild alone can change a pipeline's speed; else (a
    diagnosis saved before every tuned mode had a control) against pipeline mode."""
    if ablation is not None and ablation.baseline_run == "control" and ablation.together_speedup is not None:
        low, high = ablation.together_ci if ablation.together_ci is not None else (None, None)
        return Ratio(ablation.together_speedup, low, high)
    return rate_ratio(modes.get("tuned"), modes.get("pipeline"))


def gain_doubt(rate: float | None, rate_ci: tuple[float, float] | None, verdict: Verdict,
               modes: dict[str, ModeSummary | None], ablation: Ablation | None = None) -> str | None:
    """Why a measured speedup of an input change is not a gain, or None when nothing explains it
    away. Two things can: the run fed the step faster than free input did (synthetic mode, the
    compute ceiling), beyond both 95% intervals, which no input change can do, so the step itself
    sped up between runs (drift, warm-up, another process finishing); or the verdict says the step
    is the limit (compute), so that an input change has nothing to gain, and a speedup beside it
    is drift too (the fed step runs as fast as the free one there, within their intervals).
    Where the ablation timed free input again (analysis.ablation.runs_above_free), the run must
    beat every free-input reading: one from its own minutes that it does not beat says the step
    ran that fast on free input too, and the speedup is left to the control runs to judge."""
    readings = free_input_readings(modes, ablation)
    if rate and rate_ci and readings and all(rate_ci[0] > ci[1] for _, ci in readings):
        first, *again = readings
        said = f"the {first[0]:.1f} the step ran with free input (synthetic mode; the 95% intervals apart)"
        if again:
            said = (f"the {first[0]:.1f} the step ran with free input in synthetic mode and the "
                    + " and ".join(f"{r:.1f}" for r, _ in again)
                    + " it ran with free input again after the tuned runs (the 95% intervals apart)")
        return (f"it fed the step {rate:.1f} batches/s, above {said}: no input change can beat free input, so the "
                "step itself ran faster in that run (drift, warm-up or another process stopping)")
    if verdict.bottleneck == "compute":
        contended = " and other processes competed for the CPU" if contention_seen(verdict) else ""
        return (f"the step itself is the limit (compute-bound){contended}: an input change cannot make training "
                "faster than free input, so the speedup is drift between runs; re-measure with `pipediag compare` "
                "(interleaved turns) if it matters")
    return None


def free_input_readings(modes: dict[str, ModeSummary | None], ablation: Ablation | None
                        ) -> list[tuple[float, tuple[float, float]]]:
    """(rate, 95% interval) of each time the step ran on free input: synthetic mode,
    and the ablation's run of it again (analysis.ablation.free_input_runs); only those with an
    interval."""
    readings = []
    synthetic = modes.get("synthetic")
    if synthetic is not None and synthetic.batches_per_sec and synthetic.batches_per_sec_ci:
        readings.append((synthetic.batches_per_sec, synthetic.batches_per_sec_ci))
    if readings:  # a run again is a second reading beside synthetic mode's, never the only one
        readings += [(v.batches_per_sec, v.batches_per_sec_ci) for v in free_input_runs(ablation) if v.batches_per_sec_ci]
    return readings


def contention_seen(verdict: Verdict) -> bool:
    return any("other processes kept" in e for e in verdict.evidence)


def _believed(changes: list[Change], rate_of, verdict: Verdict, modes: dict[str, ModeSummary | None],
              ablation: Ablation | None) -> tuple[list[Change], list[tuple[Change, str]]]:
    kept, dropped = [], []
    for c in changes:
        rate, ci = rate_of(c)
        why = gain_doubt(rate, ci, verdict, modes, ablation)
        if why is None:
            kept.append(c)
        else:
            dropped.append((c, why))
    return kept, dropped


def change_text(c: Change) -> str:
    return f"{c.kind} at `{c.stage}`" if c.stage else c.kind


def _alone_rate(ablation: Ablation, key: str) -> tuple[float | None, tuple[float, float] | None]:
    run = own_run(ablation.variants, key)  # the only change: the together run was it alone
    return (None, None) if run is None else (run.batches_per_sec, run.batches_per_sec_ci)


def _together_rate(ablation: Ablation, tuned: ModeSummary | None) -> tuple[float | None, tuple[float, float] | None]:
    run = next((v for v in ablation.variants if v.role == "together"), None)
    if run is not None:
        return run.batches_per_sec, run.batches_per_sec_ci
    return (None, None) if tuned is None else (tuned.batches_per_sec, tuned.batches_per_sec_ci)



def interval_text(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" (95%: {ci[0]:.2f}-{ci[1]:.2f}x)"


def alone_basis(effect: ChangeEffect, together: Ratio | None, applied: int) -> str:
    text = f"measured alone: training ran {effect.speedup:.2f}x the original{interval_text(effect.speedup_ci)}"
    if together is not None and applied > 1:
        text += f"; all {applied} changes together: {together.value:.2f}x"
    return text


def under_contention(fixes: list[Fix], verdict: Verdict) -> list[Fix]:
    """A gain measured while other processes took CPU is not yet settled: their load may have
    changed between the runs compared. Its basis says so and names the check that settles it."""
    if not contention_seen(verdict):
        return fixes
    note = ("; measured while other processes competed for the CPU, so not yet settled: confirm with "
            "`pipediag compare` (interleaved turns against the original)")
    return [replace(f, basis=f.basis + note) if f.measured_speedup is not None else f for f in fixes]
