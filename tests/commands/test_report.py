"""`pipediag report FILE --html` for every kind of result, and `--html` on compare, sweep and
scale, run as users run them (a subprocess). The results are built in Python (no TensorFlow run)
and saved with their own `to_dict()`, as `--json` writes them."""

from dataclasses import replace

import pytest

from pipediag.records.files import write_json
from tests.comparisons import comparison
from tests.report.test_scale import result as scale_result
from tests.report.test_sweep import a_sweep
from tests.summaries import diagnosis
from tests.test_cli import pipediag

EVIL = "<script>alert(1)</script>"


def evil_comparison():
    c = comparison()
    return replace(c, b=replace(c.b, label=EVIL))


@pytest.mark.parametrize("make, texts", [
    (evil_comparison, (">FASTER<", 'id="sides"', "→ <code>&lt;script&gt;alert(1)&lt;/script&gt;</code>")),
    (a_sweep, ("Knee:</strong> batch size <strong>256</strong>", 'id="sweep"')),
    (scale_result, (">WORTH IT<", 'id="plan"')),
    (diagnosis, ("pipediag diagnose", 'id="modes"')),
], ids=["comparison", "sweep", "scale", "diagnosis"])
def test_report_rerenders_every_kind_as_html(make, texts, tmp_path):
    saved, page = tmp_path / "saved.json", tmp_path / "page.html"
    write_json(make().to_dict(), str(saved))
    result = pipediag("report", str(saved), "--html", str(page))
    assert result.returncode == 0, result.stderr
    assert f"wrote {page}" in result.stderr and result.stdout  # the terminal report is printed too
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html
    assert all(t in html for t in texts), [t for t in texts if t not in html]
    assert "<script" not in html.lower()


def test_report_html_quiet_writes_the_page_and_prints_nothing(tmp_path):
    saved, page = tmp_path / "sweep.json", tmp_path / "sweep.html"
    write_json(a_sweep().to_dict(), str(saved))
    result = pipediag("report", str(saved), "--html", str(page), "--quiet")
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    assert 'id="chart-sweep"' in page.read_text(encoding="utf-8")


def test_samples_csv_is_for_diagnoses_and_says_so(tmp_path):
    saved = tmp_path / "cmp.json"
    write_json(comparison().to_dict(), str(saved))
    result = pipediag("report", str(saved), "--samples-csv", str(tmp_path / "s.csv"))
    said = " ".join(result.stderr.split())  # the console wraps long lines
    assert result.returncode == 2
    assert "--samples-csv writes a diagnosis's samples" in said and "holds a comparison" in said
    assert "--html works for every kind" in said
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.parametrize("command", [
    ("compare", "a.py:f", "b.py:g"),
    ("sweep", "a.py:f", "--batch-sizes", "8,16"),
    ("scale", "a.py:f"),
])
def test_compare_sweep_and_scale_take_html_and_refuse_a_folder_before_running(command, tmp_path):
    assert "--html FILE" in pipediag(command[0], "--help").stdout
    result = pipediag(*command, "--html", str(tmp_path))
    # a.py does not exist: the folder is refused first, before any builder is loaded or run.
    assert result.returncode == 2 and "is a folder" in result.stderr and "HINT:" in result.stderr
