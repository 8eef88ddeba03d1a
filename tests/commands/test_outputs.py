"""Files are whole or absent: written to a temporary file, flushed, renamed; a file that cannot be
written is one error naming it, and the files written before it stay."""

import argparse
import errno
import json
import os
from dataclasses import replace

import pytest

from pipediag.commands import common
from pipediag.errors import OutputError, UsageError
from pipediag.records.files import write_text
from pipediag.records.stall import StallInfo
from pipediag.results.diagnose import read_json
from tests.summaries import diagnosis


def _args(tmp_path, **paths):
    return argparse.Namespace(**{k: None for k in ("json", "html", "samples_csv")} | paths)


def _temp_files(folder):
    return [p.name for p in folder.iterdir() if p.name.startswith(".pipediag-")]


def test_a_path_through_a_file_is_one_error_naming_it_and_the_other_files_are_written(tmp_path):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    args = _args(tmp_path, json=str(tmp_path / "run.json"), samples_csv=str(blocker / "samples.csv"))
    with pytest.raises(OutputError) as raised:
        common.write_outputs(diagnosis(), args)
    assert str(blocker / "samples.csv") in raised.value.message and raised.value.hint
    assert read_json(str(tmp_path / "run.json")).status == "complete"  # written before it: kept
    assert _temp_files(tmp_path) == []


def test_a_full_disk_keeps_the_old_file_whole_and_leaves_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    path.write_text('{"old": true}\n')

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)  # the disk filled up while the data was written
    with pytest.raises(OutputError, match="could not write .*run.json: No space left on device"):
        write_text("new contents", str(path))
    assert json.loads(path.read_text()) == {"old": True}
    assert _temp_files(tmp_path) == []


def test_the_report_is_printed_before_a_write_error_is_raised(tmp_path):
    from rich.console import Console

    out, err = Console(record=True, width=100), Console(record=True, width=100, stderr=True)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    args = _args(tmp_path, json=str(blocker / "a.json"), samples_csv=str(blocker / "b.csv"))
    with pytest.raises(OutputError, match="a.json"):
        common.print_and_write(diagnosis(), "THE REPORT", args, out, err)
    assert "THE REPORT" in out.export_text()
    assert "b.csv" in err.export_text()  # the second failure is named too


def test_unwritable_outputs_are_refused_before_the_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        common.check_outputs(_args(tmp_path, json=str(blocker / "deeper" / "run.json")))
    common.check_outputs(_args(tmp_path, json=str(tmp_path / "new" / "folders" / "run.json")))  # created later


def test_a_stalled_diagnosis_round_trips_with_its_stall(tmp_path):
    stall = StallInfo(mode="pipeline", what="pipeline mode, waiting for the next batch from the pipeline",
                      waited_s=3.0, timeout_s=3.0, steps=12, stage="map(read)")
    d = replace(diagnosis(status="stalled"), stall=stall)
    common.write_outputs(d, _args(tmp_path, json=str(tmp_path / "run.json")))
    again = read_json(str(tmp_path / "run.json"))
    assert again.status == "stalled" and again.stall == stall
    assert common.exit_code_for("stalled") == common.EXIT_STALLED == 4
    assert common.exit_code_for("interrupted") == 130 and common.exit_code_for("complete") == 0


def test_dash_is_standard_output_and_only_one_output_may_take_it(tmp_path, capsys):
    common.check_outputs(_args(tmp_path, json="-"))
    with pytest.raises(UsageError, match="--json - and --samples-csv -: only one output can go to standard output"):
        common.check_outputs(_args(tmp_path, json="-", samples_csv="-"))
    written = common.write_outputs(diagnosis(), _args(tmp_path, json="-", html=str(tmp_path / "run.html")))
    assert written == ["-", str(tmp_path / "run.html")]
    assert json.loads(capsys.readouterr().out)["status"] == "complete"  # the JSON alone
    assert not (tmp_path / "-").exists()


def test_devices_pass_the_check_before_the_run_and_stay_devices(tmp_path):
    import stat

    common.check_outputs(_args(tmp_path, json="/dev/null", samples_csv="/dev/stdout"))
    with pytest.raises(OutputError, match="could not write /dev/full: No space left on device"):
        common.write_outputs(diagnosis(), _args(tmp_path, json="/dev/null", html="/dev/full"))
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode) and stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_a_closed_standard_output_is_one_could_not_write_error(tmp_path, monkeypatch):
    class Closed:
        def write(self, text):
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

        def fileno(self):
            raise OSError("no descriptor")

    monkeypatch.setattr("sys.stdout", Closed())
    with pytest.raises(OutputError, match="could not write standard output: Broken pipe"):
        common.write_file("{}\n", "-")
