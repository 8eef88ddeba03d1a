"""The fix for a wait at each epoch's start (`pipediag run`, verdict.epoch_starts): one iterator
kept across the epochs, so the pipeline starts once. Not measured: pipediag run swaps what the
loop's iterator yields, not how often the loop makes one."""

from __future__ import annotations

from dataclasses import replace

from pipediag.analysis.epoch_starts import EpochStarts
from pipediag.fixes import catalog
from pipediag.fixes.recommend import COMPUTE_BASIS, Fix
from pipediag.records.verdict import Verdict
from pipediag.verdict.epoch_starts import worth_a_fix


def start_fix(starts: EpochStarts) -> Fix:
    share = f"{100 * starts.share:.0f}%"
    return Fix(kind="one_iterator", stage=None, title=catalog.title("one_iterator", None),
               code=catalog.code("one_iterator", None, steps_per_epoch=starts.steps_per_epoch),
               measured_speedup=None, speedup_ci=None,
               basis=(f"not measured: each epoch's start cost {starts.cost_text()}, {share} of the observed time; "
                      "one iterator pays that start once (a smaller shuffle buffer, with the files or elements "
                      "shuffled first, makes each start cheaper instead)"))


def with_start_fix(fixes: tuple[Fix, ...], starts: EpochStarts | None, verdict: Verdict) -> tuple[Fix, ...]:
    """The fixes of the steady verdict, with the epoch-start fix first where the starts limit
    training (`verdict`, from verdict.epoch_starts, says so; the steady fixes then say they act
    between the starts), else after them."""
    if not worth_a_fix(starts):
        return fixes
    if not verdict.facts.get("start_limit"):
        return fixes + (start_fix(starts),)
    between = tuple(replace(f, basis="not measured: between the epoch starts the step is the limit")
                    if f.basis == COMPUTE_BASIS else f for f in fixes)
    return (start_fix(starts),) + between
