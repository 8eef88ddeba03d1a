"""Which changes the tuned mode makes, decided from the pipeline's stages and measured facts.

Pure: stages in, `Change`s out. The rules, and why:

- A serial `map` whose function is stateless is already run in parallel by TensorFlow's default
  `map_parallelization` rewrite, so pipediag leaves it. Maps with random ops or `tf.py_function`
  stay serial in TensorFlow (it cannot prove them safe); pipediag makes them parallel with
  AUTOTUNE and deterministic order. A map that writes state (variables, tables) is never touched.
- A serial `interleave` becomes a parallel one with AUTOTUNE; its output order is unchanged.
- A file reader given several files (`TFRecordDataset(filenames)`) reads them one after another;
  it becomes a parallel interleave over the files only when a shuffle follows, since records of
  different files then alternate.
- `cache` goes at the deepest stage before the first random or Python stage or epoch repeat (a
  shuffle that does not reshuffle is not random here: every epoch sees its one order; a repeat that
  only broadcasts one input of a zip, `zip(from_tensors(x).repeat(), indices)`, is no epoch), only when that
  point is finite, its estimated size fits the RAM budget and filling it fits the time budget.
  Where TensorFlow cannot tell the length there (a file reader, a filter), one pass over that
  point counts and sizes it, stopped as soon as it passes either budget: a cache fills in one
  pass anyway, so a pass that fits the budgets is exactly the evidence a cache needs.
  Past a file list shuffled every epoch, a cache goes only when an element shuffle follows the
  cached work (training stays random), and the change says what changes in the order.
  Never for data already in memory: when every source up to that point holds tensors
  (`from_tensor_slices`, `from_tensors`, `range`) and every stage only regroups them (batch,
  unbatch, take, skip, shard, zip, concatenate), there is no work a cache could save, only a
  second copy of the data; a gain measured for it is the hand-over's noise (issue 14: `cache`
  x1.16 offered for `from_tensor_slices(x).batch(8)` on the H200, where the step was host-bound).
- A final `prefetch(AUTOTUNE)` is added when the pipeline does not end with one and TensorFlow will
  not add one itself: its `inject_prefetch` optimization (on by default with autotune) ends a
  pipeline whose last stage is synchronous (a batch, a serial map) with an autotuned prefetch, so
  an explicit one there changes nothing (on the 2-core machine it measured 0.87-1.03x alone in 9
  diagnoses, never a gain).
- When the CPUs sat idle while the step waited for input (latency-bound reads), the private
  threadpool is raised so AUTOTUNE can run more calls in flight than there are cores; not in a
  container whose CPU limit is below the host's (no thread advice above the cores it may use).
- A map that decodes a whole JPEG and then crops it (`decode_jpeg` then `random_crop` or a slice)
  decodes only the window instead (`decode_and_crop_jpeg`, the offset from the JPEG's header,
  the window widened by one MCU so that its pixels are exactly the full decode's). Also across
  stages: an earlier map (or tensorflow-datasets' own decode) decodes the whole JPEG and a later
  one only crops it, with nothing between them using the whole image: the decode moves into the
  crop stage as a windowed decode.
- A `map` directly followed by `batch` may run on whole batches instead (batch first, then map:
  one call per batch instead of one per element). Offered only for maps that call no Python and
  write no state, whose output is not cached anyway (cached work is done once), and that draw
  random numbers only shaped like their input (`tf.random.uniform(tf.shape(x))`: on a batch still
  one draw per element); a draw of a fixed shape (the coin flip of `random_flip_left_right`) is
  one per call, which batched would be one per batch, and stays refused. Whether the function
  really is element-wise is checked on real data by the TensorFlow side.
- A CSV parsed row by row (`CsvDataset`, or make_csv_dataset's interleave of one per file) whose
  rows only move (shuffle, repeat, take, skip, prefetch) until a batch is read as lines instead
  (TextLineDataset, the header line skipped), batched, and parsed a batch at a time by
  `decode_csv` with the CsvDataset's own defaults, delimiter, quoting, NA value and columns: one
  call per batch instead of hundreds of scalar tensors per row (TensorFlow's "Load CSV data"
  tutorial, "Performance": 9-15x more batches here). The same fix kind as batch-before-map. A
  quoted field holding a newline is one row to CsvDataset and two lines to TextLineDataset: the
  files are read for one first, and where one is found the change is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipediag.records.change import Change
from pipediag.records.stage import Stage

LATENCY_THREADPOOL_SIZE = 32


@dataclass(frozen=True)
class CacheEstimate:
    node: str
    elements: int | None  # None: infinite or unknown cardinality at this point
    bytes_per_element: float | None
    fill_seconds: float | None
    counted: bool = False  # elements and fill_seconds come from one timed pass, not the cardinality
    unknown_reason: str | None = None  # why elements is None, when a pass could not count them

    @property
    def total_bytes(self) -> float | None:
        if self.elements is None or self.bytes_per_element is None:
            return None
        return self.elements * self.bytes_per_element


@dataclass(frozen=True)
class TuningFacts:
    cores: int  # the cores this process may use: the container's limit, rounded up, else the host's
    ram_budget_bytes: int
    fill_budget_seconds: float
    latency_bound: bool  # CPUs idle while waiting for input
    map_parallelization_on: bool = True
    prefetch_injected: bool = False  # TensorFlow's inject_prefetch will end a synchronous pipeline with a prefetch
    cpu_limit: str | None = None  # "the container's CPU quota (2.0 cores), not the host's 64"; None: the host's
    # tf.data's default private thread pool: one thread per core TensorFlow may be scheduled on
    # (sched_getaffinity), which a CPU quota does not change; None: `cores`.
    default_threads: int | None = None


def _at(s: Stage, kind: str, description: str, *, applied: bool = True, **fields: Any) -> Change:
    """A change of `kind` at stage `s` (its label and node)."""
    return Change(kind=kind, stage=s.label, node=s.node, description=description, applied=applied, **fields)


def _per_element_draws(change: Change) -> Change:
    """The change, noting that its stage draws random numbers per element (so must the rewrite)."""
    return Change(**{**change.to_dict(), "details": {**change.details, "draws": "per_element"}})


def _unless(change: Change, stage: Stage, skips: tuple[tuple[bool, str | None], ...]) -> Change:
    """The change skipped for the first reason whose condition holds; else the change, with
    per-element draws noted when its stage is random."""
    for holds, reason in skips:
        if holds:
            return change.skipped(reason)
    return _per_element_draws(change) if stage.is_random else change


def parallel_map_changes(stages: list[Stage], facts: TuningFacts) -> list[Change]:
    changes = []
    for s in stages:
        if s.kind != "map":
            continue
        change = _at(s, "parallel_map", f"{s.label}: num_parallel_calls=AUTOTUNE, deterministic order (was serial)")
        changes.append(_unless(change, s, (
            (s.writes_state, "its function writes state (variables or tables): parallel calls would change results"),
            (not (s.is_random or s.has_py_function) and facts.map_parallelization_on,
             "stateless: TensorFlow's map_parallelization already runs it in parallel"),
        )))
    return changes


def interleave_changes(stages: list[Stage]) -> list[Change]:
    changes = []
    for s in stages:
        if s.kind == "interleave":
            changes.append(_at(s, "interleave", f"{s.label}: num_parallel_calls=AUTOTUNE (was serial); output order unchanged",
                               applied=not s.writes_state,
                               reason="its function writes state" if s.writes_state else None))
        elif s.kind == "source" and s.reader and (s.source_files or 0) > 1:
            shuffled_later = any(t.kind == "shuffle" for t in stages if t.index > s.index)
            change = _at(s, "interleave",
                         f"{s.reader} over {s.source_files} files: read several at once with a parallel interleave",
                         details={"files": s.source_files})
            changes.append(
                change if shuffled_later else change.skipped("no shuffle follows, and interleaving files changes the order")
            )
    return changes


@dataclass(frozen=True)
class CachePoint:
    stage: Stage  # the deepest deterministic stage: the cache follows it, and is named after it
    node: str  # the graph node the cache goes after: `stage`'s, or a prefetch right behind it
    existing: Stage | None = None  # a cache() or snapshot() the pipeline already has before the first random stage
    frozen: Stage | None = None  # a reshuffling shuffle before the cache: its first epoch's order is replayed
    element_shuffle: Stage | None = None  # the reshuffling shuffle after the cache that keeps epochs random
    repeat: Stage | None = None  # an epoch repeat before `stage`, moved to right after the cache

    @property
    def already_cached(self) -> bool:
        """The pipeline's own cache follows the deepest deterministic stage: nothing left to cache."""
        return self.existing is not None and self.existing.index > self.stage.index


def decode_crop_change(stage: Stage, not_found: str | None, crop_size: tuple[int, int] | None = None,
                       decode_stage: Stage | None = None, tfds: bool = False, feature: str | None = None,
                       form: dict | None = None) -> Change:
    """`not_found`: why the decode-then-crop cannot be rewritten (None: it can). `decode_stage`:
    the earlier stage that decodes the whole JPEG when `stage` only crops it (the decode moves
    into `stage`); `tfds`: that stage is tensorflow-datasets' own decode, of `feature`. `form`:
    what the fix's code should show (`decoder`: decode_jpeg or decode_image; `sampled_box`: the
    window comes from sample_distorted_bounding_box; `center_crop`: a tf.cond also takes a
    window of the whole image)."""
    if decode_stage is None:
        description = f"{stage.label}: decode only the crop window (decode_and_crop_jpeg) instead of the whole JPEG"
    else:
        whose = "tensorflow-datasets' " if tfds else ""
        description = (f"{stage.label} only crops the images {whose}{decode_stage.label} decodes whole: {decode_stage.label} "
                       f"passes the JPEG bytes on and {stage.label} decodes only the crop window (decode_and_crop_jpeg)")
    details = {"crop_size": list(crop_size) if crop_size else None}
    details.update({key: value for key, value in (form or {}).items() if value})
    if decode_stage is not None:
        details.update(decode_stage=decode_stage.label, decode_node=decode_stage.node, tfds=tfds, feature=feature)
    change = _at(stage, "decode_crop", description, details=details)
    if not_found is not None:
        return change.skipped(not_found)
    return change


def decode_crop_under_cache(change: Change, cache: Change | None, chain: list[str]) -> Change:
    """A decode moved across stages (`change`) and a cache planned between the decode and the crop
    exclude each other: the cache would then hold JPEG bytes, and the windowed decode would run
    every epoch, where the cache of decoded images decodes each image once. The cache wins: no
    decode at all beats a cheaper one each epoch. `chain`: the pipeline's node names, source first."""
    decode_node = change.details.get("decode_node")
    if not change.applied or cache is None or not cache.applied or decode_node not in chain:
        return change
    if cache.node in chain and chain.index(decode_node) <= chain.index(cache.node) < chain.index(change.node):
        return change.skipped(f"the cache planned after {cache.stage} holds the decoded images: each is decoded once, "
                              f"and decoding the window after it would decode every epoch")
    return change


# Stages after which TensorFlow's inject_prefetch adds nothing: they already run ahead of their consumer.
ASYNC_OPS = (
    "PrefetchDataset", "ParallelMapDataset", "ParallelMapDatasetV2", "ParallelInterleaveDatasetV2",
    "ParallelInterleaveDatasetV3", "ParallelInterleaveDatasetV4", "ParallelBatchDataset", "MapAndBatchDataset",
)


def prefetch_change(stages: list[Stage], facts: TuningFacts | None = None) -> Change:
    last = next((s for s in reversed(stages) if s.kind != "options"), None)
    change = Change(
        kind="prefetch",
        stage=last.label if last else None,
        node=stages[-1].node if stages else None,
        description="prefetch(AUTOTUNE) at the end, so input overlaps the step",
        applied=True,
    )
    if last is not None and last.kind == "prefetch":
        return change.skipped("the pipeline already ends with prefetch")
    if facts is not None and facts.prefetch_injected and last is not None and last.op not in ASYNC_OPS:
        return change.skipped("TensorFlow already ends it with an autotuned prefetch (tf.data's inject_prefetch "
                              "optimization, on by default with autotune): an explicit one adds nothing")
    return change


def threading_change(facts: TuningFacts) -> Change:
    change = Change(
        kind="threading",
        stage=None,
        node=None,
        description=f"options.threading.private_threadpool_size = {LATENCY_THREADPOOL_SIZE} "
        f"(default: {facts.default_threads or facts.cores}, one per core), so AUTOTUNE can keep more slow reads in "
        "flight",
        applied=True,
        details={"private_threadpool_size": LATENCY_THREADPOOL_SIZE},
    )
    if not facts.latency_bound:
        return change.skipped("the CPUs were busy while the step waited: more threads than cores would not help")
    if facts.cpu_limit is not None:
        # Under a quota the threads' CPU time is capped whatever their number; a thread that
        # wakes when the quota is spent waits for the next period, the latency this was to hide.
        return change.skipped(f"{facts.cpu_limit}: more threads than the {facts.cores} core(s) this process may use "
                              "would queue for them")
    return change


VECTORIZE_BATCH_OPS = ("BatchDatasetV2", "ParallelBatchDataset")


def cached_upto(stages: list[Stage], point: CachePoint | None, cache: Change | None) -> int | None:
    """The index of the last stage whose output is cached, by the pipeline's own cache or by pipediag's."""
    indices = []
    if point is not None and point.existing is not None:
        indices.append(point.existing.index)
    if cache is not None and cache.applied:
        indices += [s.index for s in stages if s.node == cache.node]
    return max(indices, default=None)


def vectorize_changes(stages: list[Stage], cached_upto: int | None = None,
                      draws: dict[str, str | None] | None = None) -> list[Change]:
    """Batch-before-map candidates: a map directly followed by a plain batch. Applied ones still
    need the TensorFlow-side check (the function must accept a batch and give the same values).
    `cached_upto`: the index of the last stage whose output is cached (its work is done once).
    `draws`: for random maps, stage node -> why its draws are per call (None: every draw is
    shaped like its input, so one per element on a batch too); a random map not in it is refused."""
    changes = []
    for s, after in zip(stages, stages[1:]):
        if s.kind not in ("map", "parallel_map") or after.op not in VECTORIZE_BATCH_OPS or not s.function:
            continue
        size = after.buffer_size
        change = _at(s, "vectorize_map",
                     f"{after.label} before {s.label}: {s.function} runs once per batch instead of once per element",
                     details={"batch_node": after.node, "batch_size": size, "function": s.function})
        per_call = (draws or {}).get(s.node, "it draws random numbers: one draw per batch would differ from one per element")
        changes.append(_unless(change, s, (
            (s.is_random and per_call is not None, per_call),
            (s.has_py_function, "it calls Python (tf.py_function), which cannot take a whole batch for it"),
            (s.writes_state, "its function writes state"),
            (size is None or size <= 0, f"the batch size of {after.label} is not a constant"),
            (cached_upto is not None and s.index <= cached_upto,
             "its output is cached: its work is done once, not every epoch"),
        )))
    return changes


@dataclass(frozen=True)
class QuoteScan:
    """What reading the CSV files for quoted fields that span lines found."""

    files_total: int | None  # None: the file names could not be read
    files_checked: int  # read to the end
    bytes_checked: int
    spanning: tuple[str, int] | None = None  # (file, line) where a quoted field goes on past a newline
    seconds: float | None = None
    quotes_special: bool = True  # use_quote_delim: False means every newline ends a row in CsvDataset too

    def caveat(self) -> str:
        """What the rewrite rests on, said in the change and the fix."""
        if not self.quotes_special:
            return "quotes are not special here (use_quote_delim=False): every newline ends a row, as in TextLineDataset"
        if self.files_total is None:
            return ("the file names were not readable, so the files were not checked for a quoted field holding a "
                    "newline; TextLineDataset would split one, and decode_csv would then fail loudly")
        if self.files_checked == self.files_total:
            return f"no quoted field holds a newline in the {self.files_total} file(s) (all read)"
        return (f"no quoted field holds a newline in the {self.bytes_checked / 2**20:.0f} MiB read "
                f"({self.files_checked} of {self.files_total} files whole, stopped after {self.seconds or 0:.0f} s); "
                "TextLineDataset would split one further on, and decode_csv would then fail loudly")


def batch_csv_change(reader: Stage, batch: Stage | None, problem: str | None, scan: QuoteScan | None = None,
                     details: dict | None = None) -> Change:
    """Parse the CSV a batch of lines at a time. `problem`: why the graph cannot be rewritten
    (None: it can); `scan`: what reading the files found; `details`: the decode_csv arguments
    for the fix's snippet."""
    size = batch.buffer_size if batch is not None else None
    header = bool((details or {}).get("header"))
    lines = "TextLineDataset" + (", its header line skipped" if header else "")
    description = (f"{reader.label} parses the CSV one row at a time: read the lines instead ({lines}), "
                   f"{batch.label if batch else 'batch'} them, and parse each batch with one decode_csv call")
    change = _at(reader, "vectorize_map", description,
                 details={"form": "csv", "batch_node": batch.node if batch else None, "batch_size": size, **(details or {})})
    if problem is not None:
        return change.skipped(problem)
    if scan is not None and scan.spanning is not None:
        path, line = scan.spanning
        return change.skipped(f"{path} has a quoted field that holds a newline (line {line}): TextLineDataset would "
                              "split that row in two, and decode_csv would fail on both halves")
    caveat = scan.caveat() if scan is not None else None
    if caveat is None:
        return change
    return Change(**{**change.to_dict(), "description": f"{description}; {caveat}",
                     "details": {**change.details, "quoted_newlines": caveat}})

