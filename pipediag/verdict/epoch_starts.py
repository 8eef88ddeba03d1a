"""The wait at each epoch's start in the verdict (`pipediag run`; pure numbers, no TensorFlow).

A loop that makes a new iterator every epoch pays the pipeline's start again each time (a shuffle
buffer refilled, files opened again). `analysis.epoch_starts` takes those start steps out of the
pipeline mode so that the verdict is decided on the steady steps between them; this module puts
their cost back into the answer. When the starts take as large a share of the observed time as a
wait that makes a loop highly input-bound (`INPUT_WAIT_HIGH` of its time), they are what limits
training: the verdict is input at the epoch starts, and the steady verdict is kept as its
evidence (`facts.steady_bottleneck`; a steady input verdict stays, with the starts first), and
`facts.start_limit` is set. A smaller share, down to `INPUT_WAIT_MODERATE`, or a memory verdict,
leaves the verdict as it is with one more line of evidence.

Measured in the TF custom-training walkthrough, run as published (2-core machine, 2026-12-07):
4-batch epochs, each new iterator made in ~7 ms and its first batch waiting ~16 ms for a
10,000-element shuffle buffer to refill from the CSV, beside an eager step of ~10 ms that was
otherwise the limit.
"""

from __future__ import annotations

from dataclasses import replace

from pipediag.analysis.epoch_starts import EpochStarts
from pipediag.records.verdict import Verdict
from pipediag.verdict.thresholds import INPUT_WAIT_HIGH, INPUT_WAIT_MODERATE

MIN_STARTS_HIGH = 3  # fewer epoch starts seen than this: a medium-confidence verdict


def start_line(starts: EpochStarts) -> str:
    epoch = f", an epoch here is {starts.steps_per_epoch:.0f} steps" if starts.steps_per_epoch else ""
    return (f"each epoch's start cost {starts.cost_text()}: {100 * starts.share:.0f}% of the observed time "
            f"({starts.starts} epoch start(s){epoch})")


def start_facts(starts: EpochStarts) -> dict:
    return {"epoch_start_share": round(starts.share, 4), "epoch_start_ms": round(starts.wait_per_start_ns / 1e6, 3),
            "epoch_start_iterator_ms": round(starts.made_per_start_ns / 1e6, 3) if starts.made_ns else None,
            "epoch_starts": starts.starts, "steps_per_epoch": starts.steps_per_epoch}


def limits_training(starts: EpochStarts | None) -> bool:
    """The epoch starts take a share of the time that makes them the verdict."""
    return starts is not None and starts.found and starts.share >= INPUT_WAIT_HIGH


def worth_a_fix(starts: EpochStarts | None) -> bool:
    return starts is not None and starts.found and starts.share >= INPUT_WAIT_MODERATE


def with_epoch_starts(verdict: Verdict | None, starts: EpochStarts | None) -> Verdict | None:
    """`verdict`, decided on the steps between the epoch starts, with the starts' cost in it."""
    if verdict is None or not worth_a_fix(starts):
        return verdict
    facts = {**verdict.facts, **start_facts(starts)}
    if not limits_training(starts) or verdict.bottleneck == "memory":
        return replace(verdict, evidence=verdict.evidence + (start_line(starts),), facts=facts)
    facts.update(start_limit=True)
    if verdict.bottleneck == "input":  # the steady steps wait too: the starts come first, as their fix does
        return replace(verdict, evidence=(start_line(starts),) + verdict.evidence, facts=facts)
    steady = (f"between the starts: {verdict.bottleneck}"
              + (f" ({verdict.confidence} confidence)" if verdict.bottleneck != "inconclusive" else "")
              + f", {verdict.headline}")
    facts.update(steady_bottleneck=verdict.bottleneck, steady_confidence=verdict.confidence)
    return Verdict(
        bottleneck="input",
        confidence="high" if starts.starts >= MIN_STARTS_HIGH else "medium",
        headline="input-bound at each epoch's start: your loop makes a new iterator every epoch, and each one "
                 "starts the pipeline again before its first batch",
        evidence=(start_line(starts), steady) + verdict.evidence,
        cpu_pattern=verdict.cpu_pattern,
        facts=facts,
        stage=None,
    )
