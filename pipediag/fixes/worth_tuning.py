"""Whether the tuned run (and its control and ablation) could change the answer, judged before it
runs: a measurement that cannot change the fixes is time the user waits for nothing.

It cannot when the tuning rules left every change out (the tuned pipeline would be the user's own,
rebuilt: a speedup there is drift, never a fix, fixes.measured), or when the verdict, with high
confidence, puts the limit outside the input pipeline: compute-bound (an input change's speedup
is withheld as drift, fixes.measured.gain_doubt) or memory (the fixes are a smaller batch or
buffer, not more input throughput).

The same verdict, compute or memory with high confidence, also makes the anatomy's timing of each
stage moot: it names the slow input stage, and no input stage is at fault. Then only the stages'
sizes are read (modes.waterfall.measure_sizes), which the memory rules need (`stages_untimed_reason`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pipediag.analysis.buffers import shuffle_buffers
from pipediag.analysis.modes import ModeSummary
from pipediag.records.change import Change
from pipediag.records.container import ContainerLimits
from pipediag.records.stage import Stage
from pipediag.records.verdict import Verdict
from pipediag.verdict.rules import decide

SKIPPED = "tuned mode skipped"


def verdict_so_far(summaries: dict[str, ModeSummary | None], *, stages: Sequence[Stage], handover,
                   container: ContainerLimits | None, gpus_present: bool,
                   ram_budget_bytes: int | None) -> Verdict:
    """The verdict on the modes measured so far, by the rules the diagnosis concludes with."""
    return decide(summaries, gpu_expected=gpus_present, buffers=shuffle_buffers(stages),
                  ram_budget_bytes=ram_budget_bytes, handover=handover, container=container)


def limit_outside_input(verdict: Verdict) -> bool:
    """Compute or memory with high confidence: the one test by which the tuned run is skipped and
    the stages are left untimed."""
    return verdict.confidence == "high" and verdict.bottleneck in ("compute", "memory")


def _planned(candidates: Sequence[Change]) -> str:
    return ", ".join(f"{c.kind} at `{c.stage}`" if c.stage else c.kind for c in candidates)


def skip_reason(verdict: Verdict, candidates: Sequence[Change]) -> str | None:
    """The note that says why the tuned run is skipped, or None when it could change the fixes.
    `candidates`: the changes the tuning rules planned (applied=True in the plan)."""
    if not candidates:
        return (f"{SKIPPED}: pipediag's tuning rules left every change out (each with its reason under Fixes), "
                "so a tuned run would time your pipeline rebuilt unchanged, which can show drift but never a fix")
    if not limit_outside_input(verdict):
        return None
    if verdict.bottleneck == "compute":
        why = ("the step itself is the limit (compute-bound, high confidence): an input change cannot make training "
               "faster than free input, so a speedup it showed would be drift, not a fix")
    else:
        why = ("memory is the limit (high confidence): its fixes are a smaller batch or buffer, and more input "
               "throughput would not lift it")
    return f"{SKIPPED}: {why}; planned, not measured: {_planned(candidates)}"


def stages_untimed_reason(verdict: Verdict) -> str | None:
    """Why timing each stage could not change the answer, or None when it could: the verdict, with
    high confidence, puts the limit outside the input pipeline, so no stage is named slow and no
    input fix is given (the anatomy's sizes are still read: a shuffle buffer's bytes are a memory
    verdict's evidence)."""
    if not limit_outside_input(verdict):
        return None
    limit = "the step itself is the limit (compute-bound" if verdict.bottleneck == "compute" else "memory is the limit ("
    return (f"{limit}, high confidence), so no input stage is at fault and timing each one could not change the "
            "verdict or the fixes; their sizes were read (--thorough times every stage)")
