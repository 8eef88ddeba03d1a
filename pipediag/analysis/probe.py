"""What fresh reads of the pipeline's prefixes say while a batch is awaited (pure numbers).

`modes.probe` reads each stage's prefix (the pipeline cut after that stage) for a moment, in
order from the source, while the first batch is still awaited or after a stall. This module
decides what those readings mean: how long a buffer (a shuffle, a batch) needs to fill at the
rate of the stage before it, so a long fill is read as filling and never as a stall; which stage
gives nothing while every stage before it yields; how to say so early, in a few words; and how
long a first batch is worth waiting for once a buffer is seen filling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipediag.records.kinds import FAILED_READ, FILLING, NOTHING, STOPPED
from pipediag.records.stall import PrefixReading, count_text, seconds_text

FILL_MARGIN = 2.0  # a buffer seen filling is waited for this many times its estimated fill ...
FILLING_CAP_S = 900.0  # ... from when it was seen, never past this (default deadlines only)
BUFFER_KINDS = ("shuffle", "batch")  # yield nothing until `buffer_size` elements of the stage before have come


def fill_s(kind: str, buffer_size: int | None, upstream_per_s: float | None) -> float | None:
    """Seconds a shuffle buffer or a batch needs before its first element, at the rate the stage
    before it yields; None when the stage holds no buffer or a rate is not known."""
    if kind not in BUFFER_KINDS or buffer_size is None or buffer_size <= 1 or not upstream_per_s:
        return None
    return buffer_size / upstream_per_s


@dataclass(frozen=True)
class Finding:
    """What the readings say: the stage that gives nothing while the stages before it yield
    (`stage`), or a buffer filling (`filling`), or neither, with `reason` saying why no stage is named."""

    stage: str | None
    filling: PrefixReading | None
    reason: str | None


def read(readings: Sequence[PrefixReading]) -> Finding:
    """The first reading that is not `yields` decides (the probe stops there)."""
    before: PrefixReading | None = None
    for reading in readings:
        if reading.state in (NOTHING, STOPPED):
            return Finding(reading.stage, None, None)
        if reading.state == FILLING:
            rate = "" if before is None or before.per_s is None else (
                f" at the {count_text(before.per_s)} elements/s {before.stage} yields")
            return Finding(None, reading, f"{reading.stage} was filling its buffer (~{seconds_text(reading.fill_s or 0)} s"
                                          f"{rate}); the stages after it were not read, as that would fill it again")
        if reading.state == FAILED_READ:
            return Finding(None, None, f"reading the pipeline up to {reading.stage} failed: {reading.reason}")
        before = reading
    if not readings:
        return Finding(None, None, "no stage of the pipeline could be read")
    return Finding(None, None, "every stage's prefix yielded when read fresh: the wait is on something a fresh read "
                               "does not meet (data further in, a lock or server the first reader holds)")


def early_word(finding: Finding, waited_s: float, what: str = "first batch") -> str:
    """A line for the progress display, said while the batch is still awaited."""
    head = f"no {what} after {seconds_text(waited_s)} s"
    if finding.stage is not None:
        return f"{head}: {finding.stage} gives nothing when read fresh; the stages before it yield"
    if finding.filling is not None:
        return f"{head}: {finding.filling.stage} is filling its buffer, ~{seconds_text(finding.filling.fill_s or 0)} s"
    if finding.reason and finding.reason.startswith("every stage"):
        return f"{head}, yet every stage yields when read fresh"
    return f"{head}; the stage is not known: {finding.reason}"


def keep_waiting_s(finding: Finding, seen_at_s: float, deadline_s: float, fixed: bool,
                   cap_s: float = FILLING_CAP_S) -> float:
    """The first batch's deadline (seconds from the start of the wait) once the readings are in:
    `deadline_s` unchanged, unless a buffer was seen filling and the deadline is pipediag's own
    (not `fixed` by --stall-timeout): then the fill's estimate with a margin, from when it was
    seen, up to `cap_s`."""
    if fixed or finding.filling is None or finding.filling.fill_s is None:
        return deadline_s
    return max(deadline_s, min(cap_s, seen_at_s + FILL_MARGIN * finding.filling.fill_s))
