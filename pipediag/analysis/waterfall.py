"""The pipeline's anatomy as numbers: the rate after each stage (a waterfall) and the slow stage.

The TensorFlow side (`modes.waterfall`) cuts the pipeline after each stage and counts how many
elements that prefix yields per second. This module turns those counts into one unit and picks
the stage that costs most. Pure: plain numbers in, plain data out.

Units. A cut before `batch(32)` yields elements, one after it yields batches. Every rate is
given in **batches/s of the final pipeline**: a stage's elements/s divided by how many of its
elements make one final batch (32 here). That is the unit of the modes table, so the last row is
comparable with `input_only`. Where that count is not fixed (after a `filter`, `unbatch`,
`flat_map` or `interleave` that changes how many elements there are), the stages before it are
not timed, and say why.

The slow stage. With rates r_k (batches/s) the time per batch after stage k is 1/r_k, and stage k
adds 1/r_k - 1/r_prev ms to every batch (r_prev: the timed stage before it). The stage that adds
most is `bottleneck_stage` — "where the rate falls most", measured in time, because a fall from
100 000 to 50 000 elements/s is not a bottleneck and a fall from 2 000 to 1 000 is. It is named
only when it adds at least `MIN_SHARE` of the final time per batch and its rate is clearly
below the stage before it (95% intervals apart); otherwise `None`, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pipediag import stats
from pipediag.records.record import DictRecord
from pipediag.records.stage import Stage

MIN_SHARE = 0.25  # the slow stage adds at least a quarter of the time per batch
CLOSE_RUNNER_UP = 0.75  # a second stage adding >= 75% as much is named in a note
STABLE_REL_HALF_WIDTH = 0.10  # a stage's rate is pinned down at ±10% (95% interval)
MIN_CHUNKS = 5
# The cuts past a stage need no timing (`deep_enough`) once the pipeline up to it takes at least
# AS_SLOW_AS_WHOLE of the whole pipeline's time per batch and one stage so far adds at least
# NAMED_SHARE of it: the later stages together add at most a tenth more, so one of them adds as
# much as that stage only after a cut that read some 40% faster than a shorter cut it contains
# (such dips come from noise and from Python's per-call cost: 14-15% in real/tf_csv's waterfall).
AS_SLOW_AS_WHOLE = 0.9
NAMED_SHARE = 0.5

# Stages that hand on one element per element they read (rates carry over unchanged).
_ONE_TO_ONE = {
    "source", "map", "parallel_map", "prefetch", "cache", "snapshot", "repeat", "shuffle", "take", "skip",
    "options", "zip", "scan", "concatenate",
}
_BUFFER_ONLY = {"prefetch", "options"}


@dataclass(frozen=True)
class StageTiming:
    """What the TensorFlow side measured for one cut: timed chunks after warm-up."""

    index: int
    chunk_elements: tuple[int, ...] = ()
    chunk_ns: tuple[int, ...] = ()
    warmup_ns: int = 0
    stop_reason: str | None = None  # stable | time_cap | exhausted
    reason: str | None = None  # why it was not timed (then there are no chunks)

    @property
    def elements(self) -> int:
        return sum(self.chunk_elements)

    @property
    def seconds(self) -> float:
        return sum(self.chunk_ns) / 1e9


def rate(chunk_elements: tuple[int, ...] | list[int], chunk_ns: tuple[int, ...] | list[int]):
    """Elements/s over the chunks, and its 95% interval (from the per-chunk time per element;
    each chunk is a contiguous stretch, so the chunks serve as batch means)."""
    total_ns = sum(chunk_ns)
    total = sum(chunk_elements)
    if total_ns <= 0 or total <= 0:
        return None, None
    value = total / (total_ns / 1e9)
    per = [ns / e for ns, e in zip(chunk_ns, chunk_elements) if e > 0]
    ci = stats.mean_ci(per)
    if ci is None or ci[0] <= 0:
        return value, None
    return value, (1e9 / ci[1], 1e9 / ci[0])


def is_stable(chunk_elements, chunk_ns, tolerance: float = STABLE_REL_HALF_WIDTH) -> bool:
    if len(chunk_ns) < MIN_CHUNKS:
        return False
    value, ci = rate(chunk_elements, chunk_ns)
    if value is None or ci is None:
        return False
    return (ci[1] - ci[0]) / 2 / value <= tolerance


def elements_per_batch(stages: list[Stage], batch_size: int | None = None) -> list[tuple[int | None, str | None]]:
    """For each stage: how many of its elements make one final batch, or (None, why not).

    Walks from the output upstream, multiplying by each batch stage's size. `batch_size` (the
    measured leading dimension of a batch) stands in for a batch stage whose size is not a
    constant in the graph, when there is exactly one batch stage."""
    out: list[tuple[int | None, str | None]] = [(None, None)] * len(stages)
    batches = [s for s in stages if s.kind == "batch"]
    factor: int | None = 1
    why: str | None = None
    for i in range(len(stages) - 1, -1, -1):
        s = stages[i]
        out[i] = (factor, why)
        if factor is None:
            continue
        if s.kind == "source" and s.reader:
            factor, why = None, f"{s.label} turns file names into records"
            continue
        if s.kind in _ONE_TO_ONE:
            continue
        if s.kind == "batch":
            size = s.buffer_size
            if (size is None or size <= 0) and len(batches) == 1:
                size = batch_size
            if size is None or size <= 0:
                factor, why = None, f"the batch size of {s.label} is not a constant"
            else:
                factor *= size
            continue
        factor, why = None, f"{s.label} changes how many elements there are"
    return out


def timing_plan(stages: list[Stage], batch_size: int | None = None) -> list[str | None]:
    """For each stage, None if it should be timed, else the reason it is not."""
    reasons: list[str | None] = []
    for s, (factor, why) in zip(stages, elements_per_batch(stages, batch_size)):
        if s.kind in _BUFFER_ONLY:
            reasons.append(f"not timed: {s.kind} does no work of its own")
        elif factor is None:
            reasons.append(f"not comparable: {why}")
        else:
            reasons.append(None)
    return reasons


@dataclass(frozen=True)
class WaterfallRow(DictRecord):
    _tuples = ("batches_per_sec_ci",)  # from JSON's lists back to a tuple
    index: int
    label: str
    unit: str | None  # what the cut yields: "elements" or "batches"
    rate_per_sec: float | None  # of that unit, as measured
    elements_per_batch: int | None  # the cut's elements per final batch (1 after the batch stage)
    batches_per_sec: float | None  # the comparable rate
    batches_per_sec_ci: tuple[float, float] | None
    added_ms_per_batch: float | None  # time this stage adds to each batch (vs the timed stage before)
    share: float | None  # added_ms_per_batch / the last timed stage's ms per batch
    timed_seconds: float
    elements: int  # elements (or batches) counted in the timed window
    stop_reason: str | None
    reason: str | None  # why the rate is None


@dataclass(frozen=True)
class Anatomy:
    rows: tuple[WaterfallRow, ...]
    bottleneck_stage: str | None  # the stage's label, as the user wrote it: "map(decode_example)"
    bottleneck_index: int | None
    reason: str  # why that stage, or why none
    notes: tuple[str, ...] = ()
    unit_note: str = ""  # how the rates were made comparable
    seconds: float = 0.0  # wall time the waterfall took

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": "batches_per_sec",
            "unit_note": self.unit_note,
            "bottleneck_stage": self.bottleneck_stage,
            "bottleneck_index": self.bottleneck_index,
            "reason": self.reason,
            "notes": list(self.notes),
            "seconds": self.seconds,
            "waterfall": [r.to_dict() for r in self.rows],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Anatomy:
        return cls(
            rows=tuple(WaterfallRow.from_dict(r) for r in d.get("waterfall", [])),
            bottleneck_stage=d.get("bottleneck_stage"),
            bottleneck_index=d.get("bottleneck_index"),
            reason=d.get("reason", ""),
            notes=tuple(d.get("notes", [])),
            unit_note=d.get("unit_note", ""),
            seconds=d.get("seconds", 0.0),
        )


def _unit_note(stages: list[Stage], factors: list[tuple[int | None, str | None]]) -> str:
    sizes = sorted({f for f, _ in factors if f is not None and f > 1})
    if not sizes:
        return "batches/s throughout (no stage before a batch was timed)"
    batch = next((s for s in stages if s.kind == "batch"), None)
    where = f" before {batch.label}" if batch else ""
    return f"batches/s; stages{where} yield elements, shown as elements/s ÷ {' or '.join(map(str, sizes))}"


def build_anatomy(stages: list[Stage], timings: dict[int, StageTiming], batch_size: int | None = None,
                  seconds: float = 0.0) -> Anatomy:
    """The waterfall rows and the slow stage, from the per-stage timings."""
    factors = elements_per_batch(stages, batch_size)
    rows: list[WaterfallRow] = []
    prev_ms: float | None = None
    prev_ci: tuple[float, float] | None = None
    added: dict[int, tuple[float, bool]] = {}  # index -> (ms added, clearly slower than the stage before)
    for s, (factor, why) in zip(stages, factors):
        t = timings.get(s.index)
        unit = None if factor is None else ("batches" if factor == 1 else "elements")
        if t is None or not t.chunk_ns:
            reason = (t.reason if t is not None and t.reason else None) or (
                f"not comparable: {why}" if factor is None else "not timed")
            rows.append(WaterfallRow(s.index, s.label, unit, None, factor, None, None, None, None,
                                     0.0 if t is None else t.seconds, 0, None if t is None else t.stop_reason, reason))
            continue
        raw, raw_ci = rate(t.chunk_elements, t.chunk_ns)
        if raw is None or factor is None:
            rows.append(WaterfallRow(s.index, s.label, unit, raw, factor, None, None, None, None, t.seconds,
                                     t.elements, t.stop_reason, "no elements were counted" if raw is None else why))
            continue
        bps = raw / factor
        ci = None if raw_ci is None else (raw_ci[0] / factor, raw_ci[1] / factor)
        ms = 1000.0 / bps
        add = ms - (prev_ms or 0.0)
        clearly = prev_ci is None or (ci is not None and ci[1] < prev_ci[0])
        added[s.index] = (add, clearly)
        rows.append(WaterfallRow(s.index, s.label, unit, raw, factor, bps, ci, add, None, t.seconds, t.elements,
                                 t.stop_reason, None))
        prev_ms, prev_ci = ms, ci

    if prev_ms is None:
        return Anatomy(tuple(rows), None, None, "no stage could be timed", (), _unit_note(stages, factors), seconds)
    rows = [r if r.added_ms_per_batch is None else _with_share(r, r.added_ms_per_batch / prev_ms) for r in rows]
    label = {s.index: s.label for s in stages}
    notes: list[str] = []
    cache = _replaying_cache(stages)
    if cache is not None:
        # After the first epoch the cache replays what the stages before it made: their cost is
        # paid once, not on every batch of training, so none of them is the steady state's slow
        # stage (tensorflow-datasets caches small datasets right after its decode).
        before = [i for i in added if i < cache.index]
        if before:
            notes.append(f"{', '.join(label[i] for i in before)} come(s) before {cache.label}, which replays them after "
                         "the first epoch: paid once, not ranked")
        added = {i: v for i, v in added.items() if i >= cache.index}
        if not added:
            return Anatomy(tuple(rows), None, None, f"every timed stage comes before {cache.label}, which replays them "
                           "after the first epoch", tuple(notes), _unit_note(stages, factors), seconds)
    ranked = sorted(added.items(), key=lambda kv: kv[1][0], reverse=True)
    best, (best_ms, clearly) = ranked[0]
    share = best_ms / prev_ms
    if len(ranked) > 1 and ranked[1][1][0] > 0 and ranked[1][1][0] >= CLOSE_RUNNER_UP * best_ms:
        other, (other_ms, _) = ranked[1]
        notes.append(f"{label[other]} adds nearly as much ({other_ms:.2f} vs {best_ms:.2f} ms per batch)")
    if share < MIN_SHARE:
        return Anatomy(tuple(rows), None, None,
                       f"no single stage stands out: the largest, {label[best]}, adds {100 * share:.0f}% of the "
                       f"time per batch (below {100 * MIN_SHARE:.0f}%)", tuple(notes), _unit_note(stages, factors),
                       seconds)
    if not clearly:
        return Anatomy(tuple(rows), None, None,
                       f"{label[best]} adds the most ({100 * share:.0f}% of the time per batch), but its rate is not "
                       "clearly below the stage before it (95% intervals overlap)", tuple(notes),
                       _unit_note(stages, factors), seconds)
    return Anatomy(tuple(rows), label[best], best,
                   f"{label[best]} adds {best_ms:.2f} ms to every batch, {100 * share:.0f}% of the "
                   f"{prev_ms:.2f} ms per batch after the last timed stage", tuple(notes),
                   _unit_note(stages, factors), seconds)


def deep_enough(stages: list[Stage], timings: dict[int, StageTiming], final_index: int,
                batch_size: int | None = None) -> str | None:
    """Why the stages not timed yet need no timing to name the slow stage, or None to go on.

    The anatomy times the last stage first (`final_index`, the whole pipeline), then the cuts from
    the source on. Once the longest cut timed so far takes about as long per batch as the whole
    pipeline (AS_SLOW_AS_WHOLE) and one stage up to it adds NAMED_SHARE or more of that time, the
    stages after it add together what is left, a tenth or less: none can add more than that
    stage. Never where a cache replays (the stages before it are not ranked, `build_anatomy`)."""
    if _replaying_cache(stages) is not None:
        return None
    factors = [f for f, _ in elements_per_batch(stages, batch_size)]
    final = timings.get(final_index)
    if final is None or not final.chunk_ns or not factors[final_index]:
        return None
    final_rate, _ = rate(final.chunk_elements, final.chunk_ns)
    if not final_rate:
        return None
    final_ms = 1000.0 * factors[final_index] / final_rate
    prev_ms: float | None = None
    best: tuple[float, Stage] | None = None
    last: Stage | None = None
    for s in stages:
        t = timings.get(s.index)
        if s.index >= final_index or t is None or not t.chunk_ns or not factors[s.index]:
            continue
        value, _ = rate(t.chunk_elements, t.chunk_ns)
        if not value:
            continue
        ms = 1000.0 * factors[s.index] / value
        added = ms - (prev_ms or 0.0)
        if best is None or added > best[0]:
            best = (added, s)
        prev_ms, last = ms, s
    if best is None or last is None or prev_ms is None:
        return None
    if prev_ms < AS_SLOW_AS_WHOLE * final_ms or best[0] < NAMED_SHARE * final_ms:
        return None
    return (f"not timed: the pipeline up to {last.label} already took {prev_ms:.1f} ms per batch, about as long as "
            f"the whole ({final_ms:.1f} ms), and {best[1].label} adds {100 * best[0] / final_ms:.0f}% of that: the "
            "stages after it cannot add as much (--thorough times every stage)")


def _replaying_cache(stages: list[Stage]) -> Stage | None:
    """The last `cache` (or `snapshot`) that fills in one pass and then replays: no `repeat` before it
    (a cache behind a repeat never finishes filling). None when there is none."""
    found = None
    for s in stages:
        if s.kind == "repeat":
            return found
        if s.kind in ("cache", "snapshot"):
            found = s
    return found


def _with_share(row: WaterfallRow, share: float) -> WaterfallRow:
    return replace(row, share=share)
