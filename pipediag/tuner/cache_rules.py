"""Where the tuned pipeline caches and whether it may: the deepest deterministic stage before the first random one,
what caching past a reshuffle changes, whether the cache fits the RAM budget, and when a counting pass stops."""

from __future__ import annotations

from pipediag.records.change import Change
from pipediag.records.stage import Stage
from pipediag.tuner.rules import CacheEstimate, CachePoint, TuningFacts


def _ends_determinism(s: Stage) -> bool:
    """Stages whose output differs from epoch to epoch, or that cannot be replayed from a cache."""
    return (s.is_random and not s.fixed_order) or s.has_py_function or s.writes_state or s.kind == "repeat"


def reshuffles(s: Stage) -> bool:
    """A shuffle that draws a new order every epoch (the default `reshuffle_each_iteration=True`)."""
    return s.kind == "shuffle" and s.is_random and not s.fixed_order and not s.op.startswith("ShuffleAndRepeat")


def _broadcast_repeat(stages: list[Stage], s: Stage) -> bool:
    """A repeat that only broadcasts one branch of a zip: `zip(from_tensors(x).repeat(), indices)`
    (Keras' timeseries_dataset_from_array gathers each window from the repeated array this way).
    Its zip ends with its shortest input, so the stream is not an epoch repeat; whether it is finite
    at the cache point is checked there, by the cut's cardinality (an infinite one gets no cache)."""
    later = [t for t in stages if t.index > s.index]
    return s.kind == "repeat" and bool(later) and later[0].kind == "zip"


def _deepest(stages: list[Stage]) -> tuple[Stage | None, Stage | None, Stage | None, Stage | None]:
    """(point, prefetch right behind it, existing cache, the stage that ended the search)."""
    point = existing = after = None
    for s in stages:
        if _ends_determinism(s) and not _broadcast_repeat(stages, s):
            return point, after, existing, s
        if s.kind in ("cache", "snapshot"):
            existing, after = s, None
        elif s.kind in ("prefetch", "options"):
            after = s if after is not None else None
        else:
            point = after = s
    return point, after, existing, None


# Stages an epoch repeat may move past: one element in, at most one out, the same every epoch.
# `repeat().map(f)` and `map(f).repeat()` yield the same elements when f is deterministic; a batch,
# take or skip would draw its boundaries across epochs differently, so the move stops there.
_PAST_REPEAT = ("map", "parallel_map", "filter")


def _past_repeat(stages: list[Stage], repeat: Stage) -> Stage | None:
    """The deepest stage after `repeat` it may move past (deterministic maps and filters, prefetch and
    options between them), or None: then `repeat().map(f)` may become `map(f).cache().repeat()`."""
    point = None
    for s in stages:
        if s.index <= repeat.index or s.kind in ("prefetch", "options"):
            continue
        if s.kind not in _PAST_REPEAT or _ends_determinism(s):
            break
        point = s
    return point


def _in_memory(stages: list[Stage], point: Stage | None) -> bool:
    """Nothing up to `point` but tensors in memory, regrouped or put in a fixed order."""
    return point is None or in_memory_upto([s for s in stages if not s.fixed_order], point.index)


def cache_point(stages: list[Stage]) -> CachePoint | None:
    """Where a cache would go: after the deepest stage before the first random, Python or
    state-writing one, and after any prefetch right behind it (a replay then skips its hand-off
    too). A shuffle that does not reshuffle is not random here: every epoch sees the same order,
    so a cache past it replays exactly what the pipeline would give. A cache the pipeline already
    has does not end the search (tensorflow-datasets caches small datasets after decoding, before
    its own stages); it is kept in `existing`.

    Where nothing but in-memory tensors comes before the first reshuffling shuffle (a file list
    shuffled every epoch, then read and decoded), the search goes on past that shuffle, but only
    when the stage that ends it is a second, reshuffling shuffle over the elements: the cache then
    replays the first epoch's file order and that element shuffle keeps every epoch random (what
    changes is said in the change).

    Where the search ends at an epoch repeat with deterministic maps right after it (`from_tensor_slices(jpegs)
    .repeat().map(decode).batch(n)`, issue 25), the cache goes after those maps and the repeat moves
    right after the cache (`map(decode).cache().repeat()`): the same elements in the same order,
    decoded once. Whether the data before the repeat is finite and fits is the estimate's to say.
    None when nothing fits."""
    point, after, existing, stop = _deepest(stages)
    if stop is not None and stop.kind == "repeat":
        moved = _past_repeat(stages, stop)
        if moved is not None:
            return CachePoint(moved, moved.node, existing, repeat=stop)
    if _in_memory(stages, point) and stop is not None and reshuffles(stop):
        rest = [s for s in stages if s.index > stop.index]
        p2, after2, existing2, stop2 = _deepest(rest)
        work = p2 is not None and not _in_memory([t for t in stages if t is not stop], p2)
        if work and stop2 is not None and reshuffles(stop2):
            if existing2 is not None and existing2.index > p2.index:
                return CachePoint(p2, p2.node, existing2, frozen=stop, element_shuffle=stop2)
            return CachePoint(p2, (after2 or p2).node, existing2, frozen=stop, element_shuffle=stop2)
    if _in_memory(stages, point):
        return None  # caching in-memory tensors gains nothing
    if existing is not None and existing.index > point.index:
        return CachePoint(point, point.node, existing)
    return CachePoint(point, (after or point).node, existing)


def order_change(point: CachePoint, elements: int | None) -> str | None:
    """What a cache past a reshuffling shuffle changes in the order training sees, or None."""
    if point.frozen is None or point.element_shuffle is None:
        return None
    shuffle = point.element_shuffle
    text = (f"the cache replays the order {point.frozen.label} drew in the first epoch; later epochs are "
            f"reordered only by {shuffle.label}")
    reach = shuffle.buffer_size
    if reach is not None and reach > 0 and elements is not None and reach >= elements:
        return text + (f", whose buffer holds all {elements} elements: every epoch is still a uniformly random "
                       "order, nothing changes")
    if reach is not None and reach > 0 and elements is not None:
        return text + (f", which mixes within {reach} of the {elements} elements: what came late in the first "
                       "epoch stays late-ish (the file order of later epochs no longer changes)")
    return text + ": the file order of later epochs no longer changes"


IN_MEMORY_SOURCES = ("RangeDataset", "TensorSliceDataset", "TensorDataset")


# Stages that only regroup elements they are given: no decoding, parsing or computing to save.
_REGROUPING_KINDS = {"batch", "unbatch", "take", "skip", "shard", "zip", "concatenate", "prefetch", "options",
                     "cache", "snapshot"}


def in_memory_upto(stages: list[Stage], index: int) -> bool:
    """Every stage up to `index` reads tensors already in memory or only regroups them."""
    for s in stages:
        if s.index > index:
            continue
        if s.kind == "source":
            if s.op not in IN_MEMORY_SOURCES:
                return False
        elif s.kind not in _REGROUPING_KINDS:
            return False
    return True


def cache_change(point: CachePoint, estimate: CacheEstimate, facts: TuningFacts) -> Change:
    description = f"cache() after {point.stage.label} (the last deterministic stage), in memory"
    if point.repeat is not None:
        description += (f", with the {point.repeat.label} before it moved right after the cache "
                        f"(`.repeat()` after `.cache()`): the data before it is finite, so each element is "
                        "made once instead of every epoch; the same elements in the same order")
    if point.existing is not None and not point.already_cached:
        description += f"; the pipeline's own {point.existing.label} comes earlier, so the stages after it run every epoch"
    order = order_change(point, estimate.elements)
    if order is not None:
        description += f"; {order}"
    change = Change(
        kind="cache",
        stage=point.stage.label,
        node=point.node,
        description=description,
        applied=True,
        details={
            "elements": estimate.elements,
            "estimated_bytes": estimate.total_bytes,
            "estimated_fill_seconds": estimate.fill_seconds,
            "elements_from": "one counting pass" if estimate.counted else "cardinality",
            **({"order_change": order} if order is not None else {}),
            **({"repeat_node": point.repeat.node, "repeat_stage": point.repeat.label} if point.repeat else {}),
        },
    )
    if estimate.elements is None:
        return change.skipped(estimate.unknown_reason or "the pipeline is infinite or of unknown length at that point")
    if estimate.total_bytes is None:
        return change.skipped("could not estimate the size of its elements")
    if estimate.total_bytes > facts.ram_budget_bytes:
        return change.skipped(
            f"it would hold ~{estimate.total_bytes / 2**30:.1f} GiB, over the RAM budget of "
            f"{facts.ram_budget_bytes / 2**30:.1f} GiB: consider snapshot() to disk"
        )
    if estimate.fill_seconds is not None and estimate.fill_seconds > facts.fill_budget_seconds:
        return change.skipped(
            f"filling it takes one full pass (~{estimate.fill_seconds:.0f} s), longer than the "
            f"{facts.fill_budget_seconds:.0f} s pipediag allows itself"
        )
    if estimate.counted:
        return Change(**{**change.to_dict(), "description": change.description + (
            f"; {estimate.elements} elements, ~{estimate.total_bytes / 2**20:.0f} MiB, counted in one "
            f"{estimate.fill_seconds:.1f} s pass (TensorFlow does not know the length there)")})
    return change


def _cache_left_out(point: CachePoint, reason: str) -> Change:
    """The cache at `point`, left out for `reason`."""
    return Change(
        kind="cache",
        stage=point.stage.label,
        node=point.node,
        description=f"cache() after {point.stage.label} (the last deterministic stage), in memory",
        applied=False,
        reason=reason,
    )


def already_cached_change(point: CachePoint) -> Change:
    return _cache_left_out(point, f"the pipeline already caches there ({point.existing.label} right after "
                                  f"{point.stage.label})")


def counting_verdict(elements: int, total_bytes: float, seconds: float, done: bool,
                     facts: TuningFacts) -> str | None:
    """While a counting pass runs: why to stop it now (a reason the cache is left out), or None
    to go on. Over the RAM budget is checked first: then snapshot to disk is the advice."""
    if total_bytes > facts.ram_budget_bytes:
        return (f"its length is unknown, and one pass to count it passed the RAM budget of "
                f"{facts.ram_budget_bytes / 2**30:.1f} GiB after {elements} elements (~{total_bytes / 2**30:.1f} GiB): "
                "consider snapshot() to disk")
    if seconds > facts.fill_budget_seconds and not done:
        return (f"its length is unknown, and one pass to count it did not end within "
                f"{facts.fill_budget_seconds:g} s ({elements} elements so far): it may be endless, or too long to fill")
    return None


def cache_at_csv_reader(point: CachePoint, csv: Change) -> Change:
    """A cache right after the stage whose CSV is read as lines (`csv`, applied) is left out,
    before its counting pass: after that rewrite it would hold unparsed lines, saving only the
    file reads (the parsing runs after the batch either way); and a cache of parsed rows, the
    only other thing it could hold, still moves every row as one tensor per column through the
    shuffle and the batch each epoch, the per-row cost the CSV change removes. Filling it also
    costs one whole row-by-row pass (tf_csv: the counting pass and a 20 s fill that did not end)."""
    return _cache_left_out(point, f"{csv.stage} is read as lines and parsed after the batch instead (vectorize_map): a "
                                  "cache there would hold unparsed lines, and one of parsed rows would still move them "
                                  "row by row every epoch")
