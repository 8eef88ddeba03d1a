"""RunOptions: one options object for the entry points, with their keyword arguments still working."""

import dataclasses

import pytest

from pipediag.errors import UsageError
from pipediag.records.options import NAMES, RunOptions, run_options


def test_keyword_arguments_build_the_options():
    opts = run_options(None, "diagnose", max_seconds=5, batch_size=32, gpus="0,2")
    assert opts == RunOptions(max_seconds=5, batch_size=32, gpus="0,2")
    assert run_options(None, "diagnose") == RunOptions()


def test_given_options_are_used_as_they_are():
    opts = RunOptions(max_seconds=3, sample_hz=20.0)
    assert run_options(opts, "scale") is opts


def test_options_and_keyword_arguments_together_are_refused_with_a_hint():
    with pytest.raises(UsageError) as caught:
        run_options(RunOptions(), "diagnose", max_seconds=5)
    assert "not both" in caught.value.message and "max_seconds" in caught.value.hint


def test_an_unknown_keyword_is_a_type_error_as_python_gives_it():
    with pytest.raises(TypeError, match="max_secs"):
        run_options(None, "diagnose", max_secs=5)


def test_a_field_the_entry_point_does_not_use_is_refused_not_ignored():
    with pytest.raises(UsageError, match="gpus"):
        run_options(None, "compare", unsupported=("gpus", "label"), gpus="0")
    with pytest.raises(UsageError, match="label"):
        run_options(RunOptions(label="x"), "compare", unsupported=("gpus", "label"))
    assert run_options(None, "compare", unsupported=("gpus",), batch_size=8).batch_size == 8


def test_label_defaults_to_the_builders_name():
    def make_dataset():
        pass

    assert RunOptions().label_for(make_dataset) == "make_dataset"
    assert RunOptions(label="mine").label_for(make_dataset) == "mine"
    assert RunOptions().label_for(object()) == "object"


def test_options_are_frozen_and_replace_makes_a_changed_copy():
    opts = RunOptions(batch_size=8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.batch_size = 16
    assert dataclasses.replace(opts, batch_size=16).batch_size == 16
    assert {"max_seconds", "batch_size", "gpus", "sample_hz", "stall_timeout_s", "progress"} <= NAMES


def test_the_entry_points_refuse_options_given_twice_before_running_anything():
    import pipediag
    from pipediag.api.scale import scale
    from pipediag.api.sweep import sweep

    with pytest.raises(UsageError, match="not both"):
        pipediag.diagnose(lambda: None, options=RunOptions(), max_seconds=5)
    with pytest.raises(TypeError, match="max_secs"):
        pipediag.diagnose(lambda: None, max_secs=5)
    with pytest.raises(UsageError, match="gpus"):
        pipediag.compare(lambda: None, lambda: None, gpus="0")
    with pytest.raises(UsageError, match="batch_size"):
        sweep(lambda: None, (8, 16), batch_size=8)
    with pytest.raises(UsageError, match="model or a step"):
        scale(lambda: None, options=RunOptions(model=object(), step=lambda batch: batch))
