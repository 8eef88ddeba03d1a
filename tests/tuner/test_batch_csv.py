"""CSV parsed a batch at a time: CsvDataset / make_csv_dataset rewritten to TextLineDataset → batch → decode_csv."""

import gzip

import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.tuner import batch_csv, csv_scan  # noqa: E402
from pipediag.tuner.rewrite import build, plan_tuning  # noqa: E402
from pipediag.tuner.rules import TuningFacts  # noqa: E402

FACTS = TuningFacts(cores=2, ram_budget_bytes=2**30, fill_budget_seconds=10, latency_bound=False)
HEADER = "name,city,score,count,note\n"
DEFAULTS = [[""], ["?"], [0.0], [0], ["none"]]


@pytest.fixture
def csv_files(tmp_path):
    """Three small CSVs with a header: quoted fields holding the delimiter and escaped quotes,
    empty fields (defaults), the NA value, CRLF line ends and a last line without a newline."""
    rows = [
        ['alpha,"Paris, FR",1.5,3,plain\n', '"b ""quoted""",NA,2.25,,\n', 'gamma,,NA,7,"x,y"\n'],
        ['delta,Rome,0.5,1,\r\n', 'eps,"Oslo",NA,NA,z\r\n', 'zeta,Kyiv,9,9,last'],
        [f"row{i},c{i % 3},{i / 4},{i},n{i}\n" for i in range(11)],
    ]
    paths = []
    for i, lines in enumerate(rows):
        path = tmp_path / f"part{i}.csv"
        path.write_text(HEADER + "".join(lines), newline="")
        paths.append(str(path))
    return paths


def _plan(dataset):
    return plan_tuning(dataset, FACTS, input_batches_per_sec=None)


def _csv_change(plan):
    found = [c for c in plan.changes if c.details.get("form") == "csv"]
    assert len(found) == 1, [c.key for c in plan.changes]
    return found[0]


def _rewritten(dataset):
    plan = _plan(dataset)
    change = _csv_change(plan)
    assert change.applied, change.reason
    tuned = build(plan, [change.key])
    applied = next(c for c in tuned.changes if c.key == change.key)
    assert applied.applied, applied.reason
    return tuned.dataset


def _values(dataset):
    return [tf.nest.map_structure(lambda t: t.numpy().tolist(), e) for e in dataset]


def test_make_csv_dataset_gives_the_same_batches(csv_files, tmp_path):
    ds = tf.data.experimental.make_csv_dataset(
        str(tmp_path / "part*.csv"), batch_size=4, column_defaults=DEFAULTS, label_name="score", na_value="NA",
        num_epochs=2, shuffle=False, num_parallel_reads=3)
    tuned = _rewritten(ds)
    assert tuned.element_spec == ds.element_spec
    expected = _values(ds)
    assert len(expected) == 9  # 17 rows, 2 epochs, batches of 4 (the last one of 2)
    assert _values(tuned) == expected
    labels = [s.label for s in PipelineGraph.from_dataset(tuned).stages()]
    assert "parallel_map(decode_csv)" in labels
    assert not any(s.op in batch_csv.CSV_OPS for s in PipelineGraph.from_dataset(tuned).stages())


def test_shuffled_lines_are_the_same_rows(csv_files, tmp_path):
    """Shuffled (make_csv_dataset's default: the files and a row buffer, reshuffled every epoch):
    the same rows in other orders, each epoch every row once; batches of the same size and spec."""
    ds = tf.data.experimental.make_csv_dataset(
        str(tmp_path / "part*.csv"), batch_size=3, column_defaults=DEFAULTS, na_value="NA", num_epochs=1,
        shuffle=True, shuffle_buffer_size=7, num_parallel_reads=2)
    tuned = _rewritten(ds)
    assert tuned.element_spec == ds.element_spec

    def rows(dataset):
        return sorted(row for batch in _values(dataset) for row in zip(*batch.values()))

    assert rows(tuned) == rows(ds)
    assert len(rows(ds)) == 17
    assert [len(b["name"]) for b in _values(tuned)] == [3] * 5 + [2]


def test_select_cols_and_a_csv_source_with_several_headers(csv_files):
    """A CsvDataset over several files skips each file's header: one TextLineDataset per file."""
    defaults = [tf.constant([], tf.string), [0.0], ["none"]]
    ds = tf.data.experimental.CsvDataset(csv_files, defaults, header=True, na_value="NA", select_cols=[0, 2, 4])
    ds = ds.take(15).skip(1).batch(5).map(lambda name, score, note: (name, score * 2, note))
    tuned = _rewritten(ds)
    assert _values(tuned) == _values(ds)
    assert len(_values(ds)) == 3  # 14 rows in batches of 5 (the last one of 4)


def test_other_delimiter_without_header(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("1;a;2.5\n2;;\n3;c;0\n")
    ds = tf.data.experimental.CsvDataset(str(path), [[0], ["d"], [1.0]], field_delim=";", header=False).batch(2)
    assert _values(_rewritten(ds)) == _values(ds) == [([1, 2], [b"a", b"d"], [2.5, 1.0]), ([3], [b"c"], [0.0])]


def test_interleaved_csv_datasets_written_by_hand(csv_files):
    files = tf.data.Dataset.from_tensor_slices(csv_files)
    ds = files.interleave(lambda f: tf.data.experimental.CsvDataset(f, DEFAULTS, header=True, na_value="NA"),
                          cycle_length=2, num_parallel_calls=2, deterministic=True)
    ds = ds.prefetch(4).batch(6, drop_remainder=True)
    tuned = _rewritten(ds)
    assert tuned.element_spec == ds.element_spec
    assert _values(tuned) == _values(ds)


def test_quoted_newline_refuses(tmp_path):
    path = tmp_path / "multi.csv"
    path.write_text('a,b\n1,"two\nlines"\n3,x\n')
    ds = tf.data.experimental.CsvDataset(str(path), [[0], [""]], header=True).batch(2)
    assert len(list(ds.unbatch())) == 2  # CsvDataset reads the quoted newline as one row
    change = _csv_change(_plan(ds))
    assert not change.applied
    assert "holds a newline (line 2)" in change.reason and "multi.csv" in change.reason


def test_quoted_newline_is_fine_without_quote_delim(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text('a,b\n1,"two\n3,lines"\n')
    ds = tf.data.experimental.CsvDataset(str(path), [[0], [""]], header=True, use_quote_delim=False).batch(2)
    change = _csv_change(_plan(ds))
    assert change.applied and "use_quote_delim=False" in change.details["quoted_newlines"]
    assert _values(_rewritten(ds)) == _values(ds)


@pytest.mark.parametrize("between, why", [
    (lambda ds: ds.filter(lambda a, b: a > 0), "filter"),
    (lambda ds: ds.map(lambda a, b: (a + 1, b)), "map(<lambda>)"),
    (lambda ds: ds.cache(), "would hold unparsed lines"),
])
def test_stages_that_look_at_rows_refuse(tmp_path, between, why):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,x\n2,y\n")
    ds = between(tf.data.experimental.CsvDataset(str(path), [[0], [""]], header=True)).batch(2)
    change = _csv_change(_plan(ds))
    assert not change.applied and why in change.reason


def test_refusals_the_graph_shows(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,x\n2,y\n")
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    cases = {
        "compressed (GZIP)": tf.data.experimental.CsvDataset(str(gz), [[0], [""]], header=True,
                                                             compression_type="GZIP").batch(2),
        "exclude_cols": tf.data.experimental.CsvDataset(str(path), [[0]], header=True, exclude_cols=[1]).batch(2),
        "no batch follows": tf.data.experimental.CsvDataset(str(path), [[0], [""]], header=True),
        "not a plain batch": tf.data.experimental.CsvDataset(str(path), [[0], [""]], header=True).padded_batch(2),
        "ignore_errors": None,
    }
    files = tf.data.Dataset.from_tensor_slices([str(path)])
    cases["ignore_errors"] = files.interleave(
        lambda f: tf.data.experimental.CsvDataset(f, [[0], [""]], header=True).ignore_errors()).batch(2)
    for why, ds in cases.items():
        change = _csv_change(_plan(ds))
        assert not change.applied, why
        assert (why if why != "ignore_errors" else "IgnoreErrorsDataset") in change.reason, (why, change.reason)


def test_scan_finds_an_odd_quote_across_chunks(tmp_path, monkeypatch):
    path = tmp_path / "long.csv"
    path.write_text('a,b\n' + '1,"x ""y"""\n' * 50 + '2,"open\nclose"\n')
    monkeypatch.setattr(csv_scan, "SCAN_CHUNK_BYTES", 7)  # quotes and lines split across reads
    scan = csv_scan.scan_quoted_newlines([str(path)], use_quote_delim=True)
    assert scan.spanning == (str(path), 52)
    ok = tmp_path / "ok.csv"
    ok.write_text('a,b\n' + '1,"x ""y"", z"\n' * 50)
    scan = csv_scan.scan_quoted_newlines([str(ok)], use_quote_delim=True)
    assert scan.spanning is None and scan.files_checked == 1


def test_scan_stops_at_its_time_limit_and_says_so(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('a\n"1"\n')
    ticks = iter(range(0, 1000, 10))
    scan = csv_scan.scan_quoted_newlines([str(path)] * 3, use_quote_delim=True, limit_s=5, clock=lambda: next(ticks))
    assert scan.spanning is None and scan.files_checked == 0 and scan.files_total == 3
    assert "0 of 3 files whole" in scan.caveat()


def test_no_cache_of_the_rows_the_csv_change_reads_as_lines(tmp_path, csv_files):
    """make_csv_dataset's file shuffle, then its row shuffle: the cache point is the CSV reader itself."""
    ds = tf.data.experimental.make_csv_dataset(
        str(tmp_path / "part*.csv"), batch_size=4, column_defaults=DEFAULTS, na_value="NA", num_epochs=None)
    plan = _plan(ds)
    csv = _csv_change(plan)
    cache = next(c for c in plan.changes if c.kind == "cache")
    assert csv.applied and cache.node == csv.node and not cache.applied
    assert "would hold unparsed lines" in cache.reason


def test_the_recheck_finds_the_same_site_and_reads_the_files_again(tmp_path):
    """pipediag.tuned() re-checks a saved CSV change on the pipeline as it is now."""
    from pipediag.tuner.rewrite import check_batch_csv

    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,x\n2,y\n")
    ds = tf.data.experimental.CsvDataset(str(path), [[0], [""]], header=True).batch(2)
    plan = _plan(ds)
    change = _csv_change(plan)
    assert check_batch_csv(plan.graph, change).applied
    path.write_text('a,b\n1,"x\ny"\n')  # the data changed since: a quoted newline now
    again = check_batch_csv(plan.graph, change)
    assert not again.applied and "holds a newline" in again.reason
