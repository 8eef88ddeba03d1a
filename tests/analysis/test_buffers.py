"""Shuffle-buffer memory estimates from plain stages."""

from pipediag.analysis.buffers import SUGGESTED_BUFFER_SHARE, BufferEstimate, shuffle_buffers
from pipediag.records.stage import Stage

KiB, MiB = 2**10, 2**20


def stages(shuffle_bytes=None, map_bytes=96 * KiB, buffer=10922, map_cardinality=1_000_000):
    return [
        Stage(0, "RangeDataset/_0", "RangeDataset", "source", cardinality=map_cardinality, bytes_per_element=8.0),
        Stage(1, "MapDataset/_1", "MapDataset", "map", function="load", cardinality=map_cardinality,
              bytes_per_element=map_bytes),
        Stage(2, "ShuffleDatasetV3/_2", "ShuffleDatasetV3", "shuffle", buffer_size=buffer, is_random=True,
              bytes_per_element=shuffle_bytes),
        Stage(3, "BatchDatasetV2/_3", "BatchDatasetV2", "batch", buffer_size=32, bytes_per_element=32 * 96 * KiB),
    ]


def test_a_shuffle_buffer_holds_its_size_times_the_measured_element():
    [b] = shuffle_buffers(stages(shuffle_bytes=96 * KiB))
    assert (b.stage, b.index, b.elements) == ("shuffle(10922)", 2, 10922)
    assert b.total_bytes == 10922 * 96 * KiB


def test_without_its_own_sample_the_shuffle_takes_the_size_of_what_it_reads():
    [b] = shuffle_buffers(stages(shuffle_bytes=None, map_bytes=4 * KiB))
    assert b.bytes_per_element == 4 * KiB


def test_unknown_sizes_give_no_estimate():
    assert shuffle_buffers(stages(shuffle_bytes=None, map_bytes=None)) == []
    assert shuffle_buffers(stages(buffer=None)) == []


def test_a_buffer_larger_than_its_input_holds_only_the_input():
    [b] = shuffle_buffers(stages(shuffle_bytes=KiB, map_cardinality=100))
    assert b.elements == 100
    [b] = shuffle_buffers(stages(shuffle_bytes=KiB, map_cardinality="infinite"))
    assert b.elements == 10922


def test_the_suggested_size_is_a_power_of_two_within_its_share_of_the_budget():
    b = BufferEstimate("shuffle(10922)", 2, 10922, 96 * KiB)
    size = b.suggested_elements(512 * MiB)
    assert size == 1024  # 1365 fit in a quarter of 512 MiB
    assert size * b.bytes_per_element <= SUGGESTED_BUFFER_SHARE * 512 * MiB < 2 * size * b.bytes_per_element
    assert BufferEstimate("shuffle(8)", 0, 8, 1 * 2**30).suggested_elements(512 * MiB) == 1
