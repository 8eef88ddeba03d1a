"""The CSV-as-lines rule on plain stages and numbers (no TensorFlow)."""

from pipediag.records.stage import Stage
from pipediag.tuner.rules import QuoteScan, batch_csv_change

READER = Stage(2, "LegacyParallelInterleaveDatasetV2/_9", "LegacyParallelInterleaveDatasetV2", "parallel_interleave",
               function="filename_to_dataset")
BATCH = Stage(5, "BatchDatasetV2/_12", "BatchDatasetV2", "batch", buffer_size=2048)


def test_csv_read_as_lines_is_a_vectorize_map_that_says_what_it_rests_on():
    scan = QuoteScan(files_total=20, files_checked=20, bytes_checked=32 << 20, seconds=0.2)
    change = batch_csv_change(READER, BATCH, None, scan, {"header": True})
    assert change.applied and change.kind == "vectorize_map" and change.stage == READER.label
    assert change.key == "vectorize_map@LegacyParallelInterleaveDatasetV2/_9"
    assert change.details["form"] == "csv" and change.details["batch_size"] == 2048
    assert "its header line skipped" in change.description and "batch(2048) them" in change.description
    assert change.details["quoted_newlines"] == "no quoted field holds a newline in the 20 file(s) (all read)"

    partial = QuoteScan(files_total=20, files_checked=3, bytes_checked=600 << 20, seconds=5.1)
    change = batch_csv_change(READER, BATCH, None, partial)
    assert change.applied and "3 of 20 files whole, stopped after 5 s" in change.details["quoted_newlines"]
    assert "fail loudly" in change.details["quoted_newlines"]


def test_csv_with_a_quoted_newline_or_a_graph_problem_is_refused():
    spanning = QuoteScan(files_total=2, files_checked=0, bytes_checked=10, spanning=("/d/a.csv", 7))
    change = batch_csv_change(READER, BATCH, None, spanning)
    assert not change.applied and change.reason.startswith("/d/a.csv has a quoted field that holds a newline (line 7)")
    change = batch_csv_change(READER, None, "no batch follows the CSV reading")
    assert not change.applied and change.reason == "no batch follows the CSV reading"
    assert "batch them" in change.description
