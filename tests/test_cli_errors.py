"""Bad inputs a user can give: one message with a HINT, the right exit code, and no pipediag
traceback (docs/reliability.md lists each with its test). The first is run as users run it, in a
`python -m pipediag` process; the other refusals and the NaN notes call the command line's `main`
in this process (the same parser, checks, messages and exit codes, without a TensorFlow import of
their own for each): the exit code of a real process is the first test's to prove."""

import json
import os

import pytest

from tests.test_cli import ROOT, pipediag

pytestmark = pytest.mark.slow

BAD = os.path.join(ROOT, "tests", "fixtures", "bad_inputs.py")


def bad(name: str) -> str:
    return f"{BAD}:{name}"


def refused(*args, says: str, run=None):
    result = (run or pipediag)(*args, "--quiet")
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stderr and "HINT:" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_a_builder_that_needs_batch_size_names_the_option():
    result = refused("diagnose", bad("needs_batch_size"), says="needs batch_size")
    assert "--batch-size N" in result.stderr


def test_model_with_unlabelled_batches_says_the_loss_needs_y(cli_main):
    refused("diagnose", bad("inputs_only"), "--model", bad("compiled_model"), says="the batches hold inputs only",
            run=cli_main)


def test_model_with_dict_batches_gets_the_map_to_split_the_label(cli_main):
    result = refused("diagnose", bad("dict_batches"), "--model", bad("compiled_model"), says="the batches are dicts",
                     run=cli_main)
    assert "d['label']" in result.stderr


def test_string_only_batches_without_a_model_are_refused(cli_main):
    refused("diagnose", bad("strings_only"), says="no numeric tensor a stand-in model could train on", run=cli_main)


def test_an_arg_that_does_not_parse_is_refused(cli_main):
    refused("diagnose", bad("shape_by_arg"), "--arg", "kind=['strings'", says="does not parse", run=cli_main)


def test_an_arg_given_twice_is_refused(cli_main):
    refused("diagnose", bad("shape_by_arg"), "--arg", "kind=floats", "--arg", "kind=strings", says="given twice",
            run=cli_main)


def test_compare_of_a_builder_whose_structure_changes_with_its_arguments_is_refused(cli_main):
    result = refused("compare", bad("shape_by_arg"), "--arg-a", "kind=floats", "--arg-b", "kind=strings",
                     says="A and B yield batches of different structure or dtypes", run=cli_main)
    assert "--step" in result.stderr


def test_a_nan_loss_is_a_note_and_the_run_completes(tmp_path, cli_main):
    out = tmp_path / "run.json"
    result = cli_main("diagnose", bad("scalars"), "--step", bad("nan_step"), "--max-seconds", "1", "--quiet",
                        "--json", str(out))
    assert result.returncode == 0, result.stderr
    notes = json.loads(out.read_text())["notes"]
    assert any("the loss was nan from the first step on" in n for n in notes), notes


def test_a_nan_loss_in_a_comparison_is_a_note_too(tmp_path, cli_main):
    out = tmp_path / "cmp.json"
    # 3 rounds (not up to its 6-s cap): the note is from the first steps
    result = cli_main("compare", bad("scalars"), bad("scalars"), "--step", bad("nan_step"), "--max-seconds", "6",
                        "--max-rounds", "3", "--quiet", "--json", str(out))
    assert result.returncode == 0, result.stderr
    notes = json.loads(out.read_text())["notes"]
    assert any("the loss was nan from the first step on" in n for n in notes), notes
