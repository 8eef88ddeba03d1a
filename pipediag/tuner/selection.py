"""Which of a saved diagnosis's tuning changes to carry over, and whether the pipeline is still the
one that was diagnosed. Pure: plain records in, plain records out (no TensorFlow).

A change is carried over when the tuned mode applied it and the ablation measured it as a gain,
as the fixes count one: faster than the control with the 95% intervals apart, by at least 5%,
alone (`ChangeEffect.effect == "gain"`) or on top of the others (the together run against the run
without it: more threads help once the map is parallel, not before). A change that was applied but
measured no gain is left out: it would be a code change
nobody showed to help. Changes keep their graph node names (`kind@node`), so they only mean
something for the very graph that was diagnosed: `graph_mismatch` says why a pipeline is not it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.analysis.ablation import ChangeEffect, classify
from pipediag.analysis.modes import Ratio
from pipediag.errors import UsageError
from pipediag.records.change import Change
from pipediag.records.stage import Stage
from pipediag.results.diagnose import Diagnosis


@dataclass(frozen=True)
class Selection:
    gains: tuple[Change, ...]  # applied by the tuned mode and measured as gains: carried over
    left_out: tuple[Change, ...]  # every other planned change, with the reason it is not carried over
    together_speedup: float | None  # the tuned mode's own: tuned / baseline throughput
    together_ci: tuple[float, float] | None
    baseline: str  # what together_speedup is against: "control" (the graph rebuilt, unchanged) or "pipeline"


def select_gains(diagnosis: Diagnosis, gains_only: bool = True) -> Selection:
    """The changes a diagnosis measured as gains (`gains_only=False`: every change its tuned mode
    applied, gain or not: the tuned mode's pipeline exactly). A diagnosis without a tuned mode or
    an ablation (interrupted before it, or run without the tuned mode) has nothing measured."""
    if not diagnosis.tuning:
        raise UsageError(f"the diagnosis of {diagnosis.target} has no tuned mode: nothing was measured to apply",
                         "re-run 'pipediag diagnose' with the tuned mode (the default) and --save FILE")
    if diagnosis.ablation is None:
        raise UsageError(f"the diagnosis of {diagnosis.target} holds no measured effect per change "
                         f"({diagnosis.status} run)",
                         "re-run 'pipediag diagnose ... --save FILE' to the end")
    gains, left_out = [], []
    for change in diagnosis.tuning:
        effect = diagnosis.ablation.effect(change.key)
        if not change.applied:
            left_out.append(change)
        elif gains_only and not is_gain(effect):
            what = "not measured" if effect is None else effect.effect
            if effect is not None and effect.speedup is not None:
                what += f" ({effect.speedup:.2f}x alone"
                what += ")" if effect.without_speedup is None else f", {effect.without_speedup:.2f}x on top of the others)"
            left_out.append(change.skipped(f"measured no gain: {what}"))
        else:
            gains.append(change)
    return Selection(tuple(gains), tuple(left_out), diagnosis.ablation.together_speedup,
                     diagnosis.ablation.together_ci, diagnosis.ablation.baseline_run)


def is_gain(effect: ChangeEffect | None) -> bool:
    """A measured gain, as the fixes count one: alone (or as the only change), or on top of the
    others (the together run against the run without it: a prefetch once the map is parallel)."""
    if effect is None:
        return False
    if effect.effect == "gain":
        return True
    if effect.without_speedup is None:
        return False
    low, high = effect.without_ci if effect.without_ci is not None else (None, None)
    return classify(Ratio(effect.without_speedup, low, high)) == "gain"


def _describe(stage: Stage) -> str:
    return f"{stage.label} [{stage.op}]"


def graph_mismatch(saved: tuple[Stage, ...] | list[Stage], now: tuple[Stage, ...] | list[Stage]) -> str | None:
    """Why the pipeline built now is not the one the diagnosis recorded (None: it is). Compared
    stage by stage: the op, how the user would name it (function, batch size, file count) and the
    graph node the saved changes point at."""
    saved, now = list(saved), list(now)
    for i, (a, b) in enumerate(zip(saved, now)):
        if (a.op, a.label) != (b.op, b.label):
            return f"stage {i} was {_describe(a)} when diagnosed, and is {_describe(b)} now"
        if a.node != b.node:
            return f"stage {i} ({a.label}) is graph node {b.node} now, {a.node} when diagnosed"
    if len(saved) != len(now):
        longer, which = (saved, "the diagnosed pipeline") if len(saved) > len(now) else (now, "the pipeline now")
        extra = ", ".join(s.label for s in longer[min(len(saved), len(now)):])
        return f"the diagnosed pipeline had {len(saved)} stages, it has {len(now)} now ({which} also has {extra})"
    return None


def require_same_graph(diagnosis: Diagnosis, now: tuple[Stage, ...] | list[Stage]) -> None:
    why = graph_mismatch(diagnosis.stages, now)
    if why is not None:
        raise UsageError(f"the pipeline is not the one diagnosed in this run: {why}",
                         "diagnose the pipeline as it is now ('pipediag diagnose ... --save FILE'), "
                         "or build it with the same arguments (--arg, --batch-size) as then")
