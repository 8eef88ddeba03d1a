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


def test_pipediags_options_after_the_script_are_named(tmp_path, capsys):
    # `pipediag run train.py --json run.json` hands --json to the script (its own arguments): said,
    # not refused, since the script may have an option of that name. Here a folder given as pipediag's
    # own --json stops the run right after the warning, before anything imports TensorFlow.
    from pipediag.cli import build_parser
    from pipediag.commands.run import misplaced_options

    args = build_parser().parse_args(["run", "train.py", "--json", "r.json", "--html=r.html", "--epochs", "3"])
    assert misplaced_options(tuple(args.script[1:]), args.run_options) == ["--json", "--html"]
    assert misplaced_options(("--epochs", "3", "-m", "x"), args.run_options) == []
    script = tmp_path / "train.py"
    script.write_text("raise SystemExit('must not run')\n")
    assert main(["run", "--json", str(tmp_path), str(script), "--json", "run.json"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--json after the script reaches the script as its own argument" in err
    assert "pipediag run [OPTIONS] SCRIPT [ARGS...]" in err and "is a folder" in err
