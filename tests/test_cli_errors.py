"""Bad inputs a user can give, run as users run them: one message with a HINT, the right exit
code, and no pipediag traceback (docs/reliability.md lists each with its test)."""

import os

import pytest

from tests.test_cli import ROOT, pipediag

pytestmark = pytest.mark.slow

BAD = os.path.join(ROOT, "tests", "fixtures", "bad_inputs.py")


def bad(name: str) -> str:
    return f"{BAD}:{name}"


def refused(*args, says: str):
    result = pipediag(*args, "--quiet")
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stderr and "HINT:" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_a_builder_that_needs_batch_size_names_the_option():
    result = refused("diagnose", bad("needs_batch_size"), says="needs batch_size")
    assert "--batch-size N" in result.stderr


def test_model_with_unlabelled_batches_says_the_loss_needs_y():
    refused("diagnose", bad("inputs_only"), "--model", bad("compiled_model"), says="the batches hold inputs only")


def test_model_with_dict_batches_gets_the_map_to_split_the_label():
    result = refused("diagnose", bad("dict_batches"), "--model", bad("compiled_model"), says="the batches are dicts")
    assert "d['label']" in result.stderr


def test_string_only_batches_without_a_model_are_refused():
    refused("diagnose", bad("strings_only"), says="no numeric tensor a stand-in model could train on")


def test_an_arg_that_does_not_parse_is_refused():
    refused("diagnose", bad("shape_by_arg"), "--arg", "kind=['strings'", says="does not parse")


def test_an_arg_given_twice_is_refused():
    refused("diagnose", bad("shape_by_arg"), "--arg", "kind=floats", "--arg", "kind=strings", says="given twice")


def test_compare_of_a_builder_whose_structure_changes_with_its_arguments_is_refused():
    result = refused("compare", bad("shape_by_arg"), "--arg-a", "kind=floats", "--arg-b", "kind=strings",
                     says="A and B yield batches of different structure or dtypes")
    assert "--step" in result.stderr


def test_a_nan_loss_is_a_note_and_the_run_completes(tmp_path):
    out = tmp_path / "run.json"
    result = pipediag("diagnose", bad("scalars"), "--step", bad("nan_step"), "--max-seconds", "1", "--quiet",
                      "--json", str(out))
    assert result.returncode == 0, result.stderr
    import json

    notes = json.loads(out.read_text())["notes"]
    assert any("the loss was nan from the first step on" in n for n in notes), notes


def test_a_nan_loss_in_a_comparison_is_a_note_too(tmp_path):
    out = tmp_path / "cmp.json"
    result = pipediag("compare", bad("scalars"), bad("scalars"), "--step", bad("nan_step"), "--max-seconds", "6",
                      "--quiet", "--json", str(out))
    assert result.returncode == 0, result.stderr
    import json

    notes = json.loads(out.read_text())["notes"]
    assert any("the loss was nan from the first step on" in n for n in notes), notes
