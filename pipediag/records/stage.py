"""The stages of a tf.data pipeline as plain data: what each does, what it runs, how parallel.

Filled in by `builder.graph` from the dataset's serialized graph; read by the tuning, verdict,
fixes and report code, none of which needs TensorFlow for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.records.record import DictRecord

AUTOTUNE = -1

# Graph op name -> what a user would call that stage.
STAGE_KIND_BY_OP = {
    "MapDataset": "map",
    "ParallelMapDataset": "parallel_map",
    "ParallelMapDatasetV2": "parallel_map",
    "MapAndBatchDataset": "map_and_batch",
    "ExperimentalMapAndBatchDataset": "map_and_batch",
    "InterleaveDataset": "interleave",
    "ParallelInterleaveDataset": "parallel_interleave",
    "ParallelInterleaveDatasetV2": "parallel_interleave",
    "ParallelInterleaveDatasetV3": "parallel_interleave",
    "ParallelInterleaveDatasetV4": "parallel_interleave",
    "LegacyParallelInterleaveDatasetV2": "parallel_interleave",
    "FlatMapDataset": "flat_map",
    "FilterDataset": "filter",
    "BatchDataset": "batch",
    "BatchDatasetV2": "batch",
    "ParallelBatchDataset": "batch",
    "PaddedBatchDataset": "batch",
    "PaddedBatchDatasetV2": "batch",
    "DenseToSparseBatchDataset": "batch",
    "ExperimentalDenseToSparseBatchDataset": "batch",
    "RebatchDataset": "batch",
    "RebatchDatasetV2": "batch",
    "ShuffleDataset": "shuffle",
    "ShuffleDatasetV2": "shuffle",
    "ShuffleDatasetV3": "shuffle",
    "ShuffleAndRepeatDataset": "shuffle",
    "ShuffleAndRepeatDatasetV2": "shuffle",
    "CacheDataset": "cache",
    "CacheDatasetV2": "cache",
    "SnapshotDataset": "snapshot",
    "SnapshotDatasetV2": "snapshot",
    "PrefetchDataset": "prefetch",
    "RepeatDataset": "repeat",
    "TakeDataset": "take",
    "SkipDataset": "skip",
    "ShardDataset": "shard",
    "OptionsDataset": "options",
    "ModelDataset": "options",
    "OptimizeDataset": "options",
    "OptimizeDatasetV2": "options",
    "MaxIntraOpParallelismDataset": "options",
    "PrivateThreadPoolDataset": "options",
    "ZipDataset": "zip",
    "ConcatenateDataset": "concatenate",
    "GroupByWindowDataset": "group_by_window",
    "ScanDataset": "scan",
    "UnbatchDataset": "unbatch",
    "AssertCardinalityDataset": "other",
    "TFRecordDataset": "source",
    "TFRecordDatasetV2": "source",
    "TextLineDataset": "source",
    "FixedLengthRecordDataset": "source",
    "FixedLengthRecordDatasetV2": "source",
    "CSVDataset": "source",
    "CSVDatasetV2": "source",
    "ExperimentalCSVDataset": "source",
    "TensorSliceDataset": "source",
    "TensorDataset": "source",
    "RangeDataset": "source",
    "GeneratorDataset": "source",
    "RandomDataset": "source",
    "ArrayRecordDataset": "source",
    "ListFilesDataset": "source",
    "DatasetFromGraph": "source",
}

FILE_READER_OPS = {
    "TFRecordDataset",
    "TFRecordDatasetV2",
    "TextLineDataset",
    "FixedLengthRecordDataset",
    "FixedLengthRecordDatasetV2",
}


@dataclass(frozen=True)
class Stage(DictRecord):
    """One transformation of the pipeline, numbered from the source (0) to the output."""

    index: int
    node: str  # name in the serialized graph
    op: str  # graph op, e.g. MapDataset
    kind: str  # map, parallel_map, interleave, batch, shuffle, cache, prefetch, source, from_generator, ...
    function: str | None = None  # the user's Python function it runs (for from_generator: the generator)
    parallelism: int | None = None  # num_parallel_calls / cycle_length; -1 = AUTOTUNE
    is_random: bool = False  # draws random numbers (shuffle, random ops in its function)
    # A shuffle with reshuffle_each_iteration=False: random once, then the same order every epoch
    # of the run, so its output is as deterministic as any stage for a cache after it.
    fixed_order: bool = False
    has_py_function: bool = False  # calls back into Python (tf.py_function, from_generator)
    writes_state: bool = False  # assigns variables or tables: unsafe to run in parallel
    source_files: int | None = None  # for readers whose file list is in the graph
    buffer_size: int | None = None  # shuffle / prefetch buffers; batch size for batch
    reader: str | None = None  # the file reader op a source stage runs, e.g. TFRecordDatasetV2
    # Filled in by the anatomy (modes.waterfall), None until then or where unknown:
    cardinality: int | str | None = None  # elements the pipeline up to here yields: int, "infinite", "unknown"
    bytes_per_element: float | None = None  # mean of a few sampled elements (a batch, after batching)

    @property
    def label(self) -> str:
        """How the user wrote it: `map(decode_example)`, `batch(64)`, `TFRecordDataset(4 files)`,
        `from_generator(examples)`."""
        if self.kind == "source":
            name = self.reader or self.op
            return f"{name}({self.source_files} files)" if self.source_files else name
        if self.function:
            return f"{self.kind}({self.function})"
        if self.buffer_size is not None and self.kind in ("batch", "shuffle", "prefetch"):
            size = "AUTOTUNE" if self.buffer_size == AUTOTUNE else str(self.buffer_size)
            return f"{self.kind}({size})"
        return self.kind


def is_serial(stage: Stage) -> bool:
    return stage.kind in ("map", "interleave") or (stage.kind == "parallel_map" and stage.parallelism == 1)


def function_label(function_name: str) -> str:
    """`__inference_Dataset_map_decode_example_20` -> `decode_example`; lambdas -> `<lambda>`."""
    name = function_name.split("_pipediag_")[0]  # a rewritten copy (decode_crop) keeps the user's label
    if name.startswith("__inference_"):
        name = name[len("__inference_") :]
    head, _, tail = name.rpartition("_")
    if tail.isdigit():
        name = head
    if name.startswith("Dataset_"):
        name = name[len("Dataset_") :]
        for transformation in ("flat_map", "map", "interleave", "filter", "scan", "group_by_window", "reduce"):
            if name.startswith(transformation + "_"):
                name = name[len(transformation) + 1 :]
                break
    return "<lambda>" if name == "lambda" else name
