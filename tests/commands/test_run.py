"""`pipediag run`'s command line before anything runs: the help says what the windows do to the
weights, and what is out of scope or missing is a usage error with a HINT (no TensorFlow needed)."""

import json

from pipediag.cli import main


def test_help_says_the_windows_change_the_weights(capsys):
    try:
        main(["run", "--help"])
    except SystemExit as end:
        assert end.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "this changes the weights" in text and "--then continue" in text


def test_tf_config_is_refused_as_out_of_scope(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"index": 0}}))
    script = tmp_path / "train.py"
    script.write_text("raise SystemExit('must not run')\n")
    assert main(["run", str(script)]) == 2
    err = capsys.readouterr().err
    assert "multi-worker training is out of scope" in err and "HINT" in err


def test_a_missing_script_or_none_is_a_usage_error(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.py")]) == 2
    assert "no such script" in capsys.readouterr().err
    assert main(["run"]) == 2
    assert "give a SCRIPT" in capsys.readouterr().err
