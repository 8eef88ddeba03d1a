"""From the modes' summaries to the verdict and its fixes: the one chain of rules that `diagnose()`
runs on fresh measurements and benchmarks/verdict_replay.py runs on saved ones. Plain numbers and
records in, a verdict and a recommendation out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pipediag.analysis.buffers import shuffle_buffers
from pipediag.fixes.recommend import Recommendation, recommend
from pipediag.records.change import Change
from pipediag.records.container import ContainerLimits
from pipediag.records.kinds import FAILED, INTERRUPTED, STALLED
from pipediag.records.stage import Stage
from pipediag.records.step import EagerUse
from pipediag.records.verdict import Verdict
from pipediag.verdict.devices import with_device_lines
from pipediag.verdict.rules import decide, nothing_left_to_change


@dataclass(frozen=True)
class Conclusion:
    verdict: Verdict
    recommendation: Recommendation


def ended_text(status: str) -> str:
    """How a run that did not complete ended, for the verdict's evidence."""
    return {STALLED: "stalled", FAILED: "failed", INTERRUPTED: "was interrupted"}.get(status, "ended")


def conclude(summaries: dict[str, Any], *, status_complete: bool, status: str, stages: Sequence[Stage],
             tuning: Sequence[Change], ablation, candidates: int | None, handover, container: ContainerLimits | None,
             gpus_present: bool, tf_gpu_without_memory_growth: bool, ram_budget_bytes: int | None,
             step_accelerators: tuple[str, ...], framework: str | None, slow_stage: str | None,
             handover_missing: str | None = None, step_xla: bool | None = None,
             step_eager: EagerUse | None = None) -> Conclusion:
    """The verdict (rules, then the notes that depend on the run: an incomplete run's low
    confidence, nothing left to change on the input side, the accelerators' lines) and the fixes.
    `summaries` must hold the synthetic mode's. `candidates`: how many changes the tuning rules
    planned (None: tuning was not planned). `step_accelerators`: the devices that did the step's work
    (steps.placement.accelerators of the step's devices; empty without a step). `handover_missing`:
    why the hand-over could not be timed, when pipediag's own measurement of it failed. `step_xla`:
    whether the step is compiled with XLA already (StepInfo.xla). `step_eager`: how the step ran
    TensorFlow in synthetic mode (StepInfo.eager)."""
    verdict = decide(summaries, gpu_expected=gpus_present, buffers=shuffle_buffers(stages),
                     ram_budget_bytes=ram_budget_bytes, handover=handover, container=container,
                     handover_missing=handover_missing)
    if not status_complete:
        verdict = replace(verdict, confidence="low", evidence=verdict.evidence + (
            f"the run {ended_text(status)}: this verdict uses only the modes that finished",))
    verdict = nothing_left_to_change(verdict, [(c.kind, c.stage, c.reason) for c in tuning if not c.applied],
                                     candidates)
    verdict = with_device_lines(verdict, summaries, step_accelerators)
    recommendation = recommend(
        verdict, summaries, list(tuning), ablation=ablation, gpu_present=gpus_present,
        tf_gpu_without_memory_growth=tf_gpu_without_memory_growth, framework=framework, stages=stages,
        slow_stage=slow_stage, container=container, step_xla=step_xla, step_eager=step_eager,
    )
    return Conclusion(verdict, recommendation)
