"""The epoch starts' cost in `pipediag run`'s verdict and fixes (verdict.epoch_starts,
fixes.epoch_starts), on scripted numbers: the TF custom-training walkthrough as recorded on the
2-core machine (2026-12-07), and the lines either side of it."""

import pytest

from pipediag.analysis.epoch_starts import EpochStarts
from pipediag.fixes.epoch_starts import with_start_fix
from pipediag.fixes.recommend import COMPUTE_BASIS, Fix
from pipediag.records.verdict import Verdict
from pipediag.verdict.epoch_starts import with_epoch_starts

MS = 1_000_000
STEADY_COMPUTE = Verdict("compute", "high", "compute-bound: the step itself is the limit, not the input",
                         ("the step waited for input 3% of the time in pipeline mode",), facts={"gap": 1.0})
XLA = Fix("xla", None, "Compile the step with XLA", "model.compile(..., jit_compile=True)", None, None, COMPUTE_BASIS)


def starts(share: float, count: int = 29, per_start_ms: float = 24.0, made_ms: float = 8.0) -> EpochStarts:
    """`count` epoch starts of `per_start_ms` each (`made_ms` of it making the iterator), 4-step
    epochs, taking `share` of the observed time."""
    total = int(count * per_start_ms * MS / share)
    return EpochStarts(starts=count, start_steps=tuple(range(0, 4 * count, 4)),
                       start_wait_ns=(int(per_start_ms * MS),) * count, steady_wait_median_ns=0.26 * MS,
                       total_ns=total, steps_per_epoch=4.0, made_ns=(int(made_ms * MS),) * count)


def test_the_walkthrough_starts_limit_training():
    found = starts(share=0.36)
    v = with_epoch_starts(STEADY_COMPUTE, found)
    assert (v.bottleneck, v.confidence) == ("input", "high")
    assert v.evidence[0] == ("each epoch's start cost 24 ms (8 ms making its iterator, the rest waiting for its first "
                             "batch(es)): 36% of the observed time (29 epoch start(s), an epoch here is 4 steps)")
    assert v.evidence[1].startswith("between the starts: compute (high confidence), compute-bound")
    assert v.evidence[2:] == STEADY_COMPUTE.evidence
    assert v.facts["steady_bottleneck"] == "compute" and v.facts["start_limit"] and v.facts["gap"] == 1.0
    assert v.facts["epoch_start_share"] == pytest.approx(0.36, abs=1e-3) and v.facts["epoch_start_iterator_ms"] == 8.0
    fixes = with_start_fix((XLA,), found, v)
    assert [f.kind for f in fixes] == ["one_iterator", "xla"]
    assert "range(4)" in fixes[0].code and "steps_per_epoch=4" in fixes[0].code and "36%" in fixes[0].basis
    assert fixes[1].basis == "not measured: between the epoch starts the step is the limit"  # not "input won't help"


def test_a_few_starts_give_medium_confidence():
    v = with_epoch_starts(STEADY_COMPUTE, starts(share=0.36, count=2))
    assert (v.bottleneck, v.confidence) == ("input", "medium")


@pytest.mark.parametrize("share", [0.05, 0.19])
def test_a_moderate_share_is_evidence_and_a_last_fix(share):
    found = starts(share=share)
    v = with_epoch_starts(STEADY_COMPUTE, found)
    assert (v.bottleneck, v.headline) == ("compute", STEADY_COMPUTE.headline)
    assert v.evidence[:-1] == STEADY_COMPUTE.evidence and v.evidence[-1].startswith("each epoch's start cost")
    assert "start_limit" not in v.facts
    fixes = with_start_fix((XLA,), found, v)
    assert [f.kind for f in fixes] == ["xla", "one_iterator"] and fixes[0].basis == COMPUTE_BASIS


def test_a_small_share_changes_nothing():
    found = starts(share=0.04)
    assert with_epoch_starts(STEADY_COMPUTE, found) == STEADY_COMPUTE
    assert with_start_fix((XLA,), found, STEADY_COMPUTE) == (XLA,)
    assert with_epoch_starts(STEADY_COMPUTE, None) == STEADY_COMPUTE and with_epoch_starts(None, found) is None


def test_a_steady_input_verdict_keeps_its_headline_with_the_starts_first():
    steady = Verdict("input", "high", "highly input-bound", ("the step waited for input 30%",), stage="map(decode)")
    found = starts(share=0.5)
    v = with_epoch_starts(steady, found)
    assert (v.bottleneck, v.headline, v.stage) == ("input", "highly input-bound", "map(decode)")
    assert v.evidence[0].startswith("each epoch's start cost") and v.facts["start_limit"]
    assert with_start_fix((), found, v)[0].kind == "one_iterator"


def test_a_memory_verdict_stays_and_the_start_fix_comes_after():
    steady = Verdict("memory", "high", "out of memory", ("the step ran out of memory",))
    found = starts(share=0.4)
    v = with_epoch_starts(steady, found)
    assert v.bottleneck == "memory" and v.evidence[-1].startswith("each epoch's start cost")
    assert [f.kind for f in with_start_fix((XLA,), found, v)] == ["xla", "one_iterator"]


def test_an_inconclusive_steady_state_under_starts_that_limit_training():
    steady = Verdict("inconclusive", "low", "the modes disagree", (), reason="near a line")
    v = with_epoch_starts(steady, starts(share=0.3))
    assert v.bottleneck == "input" and v.evidence[1] == "between the starts: inconclusive, the modes disagree"
    assert v.reason is None


def test_the_iterator_is_not_named_where_its_making_was_not_timed():
    found = starts(share=0.3, made_ms=0)
    assert "making its iterator" not in with_epoch_starts(STEADY_COMPUTE, found).evidence[0]
