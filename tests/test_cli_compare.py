"""`pipediag compare` as users run it: `python -m pipediag` in a subprocess; by the command line's
`main` in this process (`cli_main`) where a test is about what the command says and writes."""

import json

import pytest

from tests.test_cli import pipediag


def test_compare_needs_two_pipelines(fixture_spec):
    result = pipediag("compare", fixture_spec("in_memory"))
    assert result.returncode == 2
    assert "compare needs two pipelines" in result.stderr and "HINT:" in result.stderr


def test_baseline_takes_exactly_one_spec(fixture_spec, tmp_path):
    result = pipediag("compare", "--baseline", str(tmp_path / "run.json"), fixture_spec("in_memory"),
                      fixture_spec("in_memory"))
    assert result.returncode == 2 and "exactly one SPEC" in result.stderr


@pytest.mark.slow
def test_a_missing_baseline_file_is_a_usage_error(fixture_spec, tmp_path, cli_main):
    # by `main` here: a real process's exit 2 is the two tests above's
    result = cli_main("compare", "--baseline", str(tmp_path / "nope.json"), fixture_spec("in_memory"), "--quiet")
    assert result.returncode == 2 and "no such file" in result.stderr


def test_bad_percentages_and_round_caps_are_usage_errors(fixture_spec):
    spec = fixture_spec("in_memory")
    assert pipediag("compare", spec, spec, "--fail-if-slower", "five").returncode == 2
    assert pipediag("compare", spec, spec, "--max-rounds", "2").returncode == 2


@pytest.mark.slow
def test_arg_a_and_arg_b_compare_two_settings_of_one_builder(fixture_spec, tmp_path, cli_main):
    out, page = tmp_path / "cmp.json", tmp_path / "cmp.html"
    # By `main` in this process (what the command says and writes, not the process), 3 rounds: the
    # verdict's carrying is the point, not how soon real rounds decide it.
    result = cli_main("compare", fixture_spec("sleep_map"), "--arg-a", "parallel=False", "--arg-b", "parallel=True",
                      "--step", fixture_spec("light_step"), "--max-seconds", "20", "--max-rounds", "3",
                      "--json", str(out), "--html", str(page))
    assert result.returncode == 0, result.stderr
    # Whether B is called faster rests on real rounds: beside other sessions' TensorFlow on 2 cores
    # the 4x gain once was not FASTER (issue 15 item 7). The decision is tested on a fake clock
    # (tests/modes/test_compare.py); here, that the verdict is carried the same way everywhere
    # and never points the wrong way.
    data = json.loads(out.read_text())
    main = data["comparison"]
    assert main["verdict"] in ("faster", "no_significant_difference", "inconclusive"), main
    assert main["rounds"] >= 2 and main["ci_low"] <= main["ratio"] <= main["ci_high"]
    badge = main["verdict"].replace("_", " ").upper()
    html = page.read_text(encoding="utf-8")
    assert f">{badge}<" in html and 'id="chart-rounds"' in html and "parallel=True" in html
    assert badge in result.stdout.upper()
    assert "parallel=False" in result.stdout and "parallel=True" in result.stdout
    assert "round" in result.stderr  # the progress bar
    again = pipediag("report", str(out))
    assert again.returncode == 0 and badge in again.stdout.upper()


@pytest.mark.slow
def test_fail_if_slower_against_a_saved_baseline_exits_3(fixture_spec, tmp_path, cli_main):
    saved = tmp_path / "baseline.json"
    # The saved run reads its batches from memory (thousands a second); B sleeps 48 ms a batch: a
    # gap of two orders of magnitude, which no busy neighbour closes (a 4x gap once could be), nor
    # the saved run's 1-s windows (2 s before). The saved run is only this test's input: made in
    # this process; the gate's exit code is the real process's.
    first = cli_main("diagnose", fixture_spec("fast_map"), "--step", fixture_spec("light_step"),
                     "--max-seconds", "1", "--quiet", "--save", str(saved))
    assert first.returncode == 0, first.stderr
    result = pipediag("compare", "--baseline", str(saved), fixture_spec("serial_sleep_map"),
                      "--step", fixture_spec("light_step"), "--fail-if-slower", "5%", "--max-seconds", "20",
                      "--quiet")
    assert result.returncode == 3, result.stdout + result.stderr
    assert "SLOWER" in result.stdout and "gate: FAIL" in result.stdout
    assert "saved run" in result.stdout and "not interleaved" in result.stdout
