"""The stage checks of a patch's proof, on scripted stages (the graph side is tested in tests/commands/test_fix.py)."""

from pipediag.patch.prove import check_stage
from pipediag.patch.source import Edit
from pipediag.records.stage import Stage


def edit(kind, stage):
    return Edit(kind, stage, "", True)


SRC = Stage(0, "n0", "TensorSliceDataset", "source")
PMAP = Stage(1, "n1", "ParallelMapDatasetV2", "parallel_map", function="decode", parallelism=-1)
CACHE = Stage(2, "n2", "CacheDatasetV2", "cache")
BATCH = Stage(3, "n3", "BatchDatasetV2", "batch", buffer_size=32)
PREFETCH = Stage(4, "n4", "PrefetchDataset", "prefetch", buffer_size=-1)


def test_each_kind_finds_its_stage():
    stages = [SRC, PMAP, CACHE, BATCH, PREFETCH]
    assert check_stage(edit("parallel_map", "map(decode)"), stages, None).ok
    assert check_stage(edit("cache", "map(decode)"), stages, None).ok
    assert check_stage(edit("prefetch", "batch(32)"), stages, None).ok
    assert check_stage(edit("threading", None), stages, 32).ok


def test_missing_stages_fail_with_what_was_found():
    serial = Stage(1, "n1", "MapDataset", "map", function="decode", parallelism=1)
    stages = [SRC, serial, BATCH]
    check = check_stage(edit("parallel_map", "map(decode)"), stages, None)
    assert not check.ok and check.text == "map(decode) [MapDataset], parallelism 1"
    assert check_stage(edit("cache", "map(decode)"), stages, None).text == "map(decode) is followed by batch(32)"
    assert not check_stage(edit("prefetch", "batch(32)"), stages, None).ok
    assert not check_stage(edit("threading", None), stages, None).ok
    assert not check_stage(edit("cache", "map(other)"), stages, None).ok


def test_batch_before_map():
    vmap = Stage(2, "n2", "ParallelMapDatasetV2", "parallel_map", function="normalize", parallelism=-1)
    assert check_stage(edit("vectorize_map", "map(normalize)"), [SRC, Stage(1, "n1", "BatchDatasetV2", "batch"),
                                                                  vmap], None).ok
    assert not check_stage(edit("vectorize_map", "map(normalize)"), [SRC, vmap], None).ok
