"""Which ops in a pipeline's functions make a stage random, run Python, or write state; reading an op's
integer value."""

from __future__ import annotations

from collections.abc import Iterable

from pipediag.records.stage import Stage

# The ops that make a function random (stateful random number generation).
RANDOM_OPS = {
    "RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal", "RandomShuffle",
    "Multinomial", "RandomGamma", "RandomPoisson", "RandomPoissonV2", "RandomCrop",
    "ParameterizedTruncatedNormal", "StatefulUniform", "StatefulUniformInt", "StatefulUniformFullInt",
    "StatefulStandardNormal", "StatefulStandardNormalV2", "StatefulTruncatedNormal",
    "StatefulRandomBinomial", "RngSkip", "RngReadAndSkip", "SampleDistortedBoundingBox",
    "SampleDistortedBoundingBoxV2", "RandomDataset", "ShuffleDataset", "ShuffleDatasetV2",
    "ShuffleDatasetV3", "ShuffleAndRepeatDataset", "ShuffleAndRepeatDatasetV2",
}
PY_OPS = {"EagerPyFunc", "PyFunc", "PyFuncStateless"}
WRITE_PREFIXES = ("Assign", "ResourceScatter", "ResourceApply", "ResourceSparseApply")
WRITE_OPS = {"LookupTableInsertV2", "LookupTableRemoveV2", "StackPushV2", "QueueEnqueueV2", "QueueEnqueueManyV2"}
SHUFFLE_KINDS = {"shuffle"}


def as_int(value) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def is_random_op(op: str) -> bool:
    return op.startswith(("Random", "Stateful", "Rng")) and not op.startswith("StatefulPartitionedCall")


def has_shuffle_after(stages: Iterable[Stage], index: int) -> bool:
    return any(s.kind in SHUFFLE_KINDS for s in stages if s.index > index)
