"""Which GPUs the job uses: --gpus, CUDA_VISIBLE_DEVICES, every GPU; indices and UUIDs."""

import pytest

from pipediag.errors import UsageError
from pipediag.samples.selection import SOURCE_ALL, SOURCE_CUDA, SOURCE_EXPLICIT, GpuSelection

DEVICES = [(0, "GPU-aaaa1111-0000"), (1, "GPU-bbbb2222-0000"), (2, "GPU-cccc3333-0000"), (3, "GPU-dddd4444-0000")]


def test_explicit_wins_over_cuda_visible_devices():
    chosen = GpuSelection.choose("2, 0", environ={"CUDA_VISIBLE_DEVICES": "1"})
    assert chosen.source == SOURCE_EXPLICIT
    assert chosen.resolve(DEVICES) == ((2, 0), None)


def test_cuda_visible_devices_then_every_gpu():
    assert GpuSelection.choose(None, environ={"CUDA_VISIBLE_DEVICES": "1,3"}).resolve(DEVICES) == ((1, 3), None)
    every = GpuSelection.choose(None, environ={})
    assert every.source == SOURCE_ALL and every.resolve(DEVICES) == ((0, 1, 2, 3), None)


def test_uuids_and_unique_prefixes_as_cuda_takes_them():
    chosen = GpuSelection.choose(["GPU-cccc3333-0000", "dddd"], environ={})
    assert chosen.resolve(DEVICES) == ((2, 3), None)


def test_an_empty_cuda_visible_devices_uses_no_gpu():
    indices, unmatched = GpuSelection.choose(None, environ={"CUDA_VISIBLE_DEVICES": ""}).resolve(DEVICES)
    assert indices == () and unmatched is None


def test_cuda_stops_at_the_first_entry_it_cannot_use_and_says_which():
    chosen = GpuSelection.choose(None, environ={"CUDA_VISIBLE_DEVICES": "1,7,2"})
    indices, unmatched = chosen.resolve(DEVICES)
    assert indices == (1,)  # CUDA ignores everything from the invalid 7 on
    assert "CUDA_VISIBLE_DEVICES names 7" in unmatched and "GPU-aaaa1111-0000" in unmatched


def test_an_explicit_list_is_read_whole():
    indices, unmatched = GpuSelection.choose("1,7,2", environ={}).resolve(DEVICES)
    assert indices == (1, 2) and "--gpus names 7" in unmatched


def test_an_ambiguous_uuid_prefix_matches_nothing():
    devices = [(0, "GPU-abc1"), (1, "GPU-abc2")]
    assert GpuSelection.choose("abc", environ={}).resolve(devices)[0] == ()


def test_an_empty_explicit_choice_is_a_usage_error_with_a_hint():
    with pytest.raises(UsageError) as error:
        GpuSelection.choose(" , ", environ={})
    assert "--gpus 0,1" in error.value.hint


def test_the_line_says_which_and_why():
    assert GpuSelection.choose(None, environ={"CUDA_VISIBLE_DEVICES": "2,3"}).describe((2, 3)) == \
        f"GPUs 2, 3 ({SOURCE_CUDA})"
    assert GpuSelection.choose("1", environ={}).describe((1,)) == f"GPU 1 ({SOURCE_EXPLICIT})"
