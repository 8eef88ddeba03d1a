"""`pipediag report FILE --html` for every kind of result, and `--html` on compare, sweep and
scale, run as users run them (a subprocess). The results are built in Python (no TensorFlow run)
and saved with their own `to_dict()`, as `--json` writes them."""

import os
import subprocess
import sys
from dataclasses import replace

import pytest

from pipediag.records.files import write_json
from tests import unprivileged
from tests.comparisons import comparison
from tests.report.test_scale import result as scale_result
from tests.report.test_sweep import a_sweep
from tests.summaries import diagnosis
from tests.test_cli import ROOT, pipediag

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


def _saved_diagnosis(tmp_path):
    saved = tmp_path / "run.json"
    write_json(diagnosis().to_dict(), str(saved))
    return saved


@pytest.mark.slow
def test_dash_sends_one_file_to_standard_output_and_the_report_to_standard_error(tmp_path):
    result = pipediag("report", str(_saved_diagnosis(tmp_path)), "--samples-csv", "-")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("time_s,time_ns,mode,phase,")  # `| some_tool` reads the CSV alone
    assert "Modes" in result.stderr and "Modes" not in result.stdout
    assert "wrote" not in result.stderr
    page = pipediag("report", str(_saved_diagnosis(tmp_path)), "--html", "-", "--quiet")
    assert page.returncode == 0 and page.stdout.startswith("<!DOCTYPE html>") and page.stderr == ""
    both = pipediag("report", str(_saved_diagnosis(tmp_path)), "--html", "-", "--samples-csv", "-")
    assert both.returncode == 2 and "only one output can go to standard output" in both.stderr


def test_dev_full_is_one_error_after_the_report_and_stays_a_device(tmp_path):
    import stat

    result = pipediag("report", str(_saved_diagnosis(tmp_path)), "--html", "/dev/full",
                      "--samples-csv", str(tmp_path / "s.csv"))
    assert result.returncode == 2
    assert "could not write /dev/full: No space left on device" in " ".join(result.stderr.split())
    assert "Modes" in result.stdout and (tmp_path / "s.csv").exists()  # the report and the other file
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)


def test_dev_stdout_into_a_file_keeps_the_report_beside_the_file(tmp_path):
    """`--samples-csv /dev/stdout > out.txt`: the CSV is written through descriptor 1, so the
    report that follows it lands in out.txt too, and out.txt is the shell's file, not a new one."""
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        result = subprocess.run([sys.executable, "-m", "pipediag", "report", str(_saved_diagnosis(tmp_path)),
                                 "--samples-csv", "/dev/stdout"], stdout=f, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT, COLUMNS="100"), timeout=180)
        inode = os.fstat(f.fileno()).st_ino
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert text.startswith("time_s,time_ns,mode,phase,") and "Modes" in text
    assert os.stat(out).st_ino == inode


@pytest.mark.slow
def test_an_unprivileged_user_gets_the_device_error_and_the_folder_check(tmp_path):
    """As nobody: /dev/full is written to (and full), /dev/null passes, a folder it may not write
    in is refused before anything is read."""
    import shutil
    import tempfile

    unprivileged.skip_unless_possible()
    folder = tempfile.mkdtemp(prefix="pipediag-as-user-")
    try:
        os.chmod(folder, 0o755)
        saved = os.path.join(folder, "run.json")
        write_json(diagnosis().to_dict(), saved)
        os.chmod(saved, 0o644)

        def as_nobody(*args):
            return subprocess.run([*unprivileged.NOBODY, sys.executable,
                                   "-m", "pipediag", "report", saved, *args], capture_output=True, text=True, cwd="/",
                                  env=dict(os.environ, PYTHONPATH=ROOT, COLUMNS="200", HOME="/tmp"), timeout=180)

        full = as_nobody("--html", "/dev/full", "--samples-csv", "/dev/null")
        assert full.returncode == 2 and "could not write /dev/full: No space left on device" in full.stderr
        locked = as_nobody("--html", os.path.join(folder, "run.html"))
        assert locked.returncode == 2 and f"the folder {folder} is not writable" in locked.stderr
    finally:
        shutil.rmtree(folder)
