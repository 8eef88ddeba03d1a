import os

import pytest

from pipediag.builder.target import call_user, load_callable, parse_kwarg, parse_spec
from pipediag.errors import UsageError, UserCodeError


def test_parse_spec_forms():
    assert parse_spec("data.py:make").path == "data.py"
    assert parse_spec("pkg.data:make").module == "pkg.data"
    assert parse_spec("C:\\work\\data.py:make").path == "C:\\work\\data.py"
    assert parse_spec("pkg.data:Factory.build").attr == "Factory.build"
    for bad in ("data.py", "data.py:", ":make", "pkg data:make", "data.py:not-valid"):
        with pytest.raises(UsageError):
            parse_spec(bad)


def test_load_from_file_and_its_neighbours(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 41\n")
    (tmp_path / "data.py").write_text("import helper\ndef make():\n    return helper.VALUE + 1\n")
    fn = load_callable(f"{tmp_path}/data.py:make")
    assert fn() == 42


def test_missing_file_and_function_say_what_to_do(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        load_callable(f"{tmp_path}/nope.py:make")
    (tmp_path / "data2.py").write_text("def make_dataset():\n    pass\ndef other():\n    pass\n")
    with pytest.raises(UsageError) as info:
        load_callable(f"{tmp_path}/data2.py:make")
    assert "functions there: make_dataset, other" in info.value.hint


def test_errors_while_importing_the_users_file_are_user_code_errors(tmp_path):
    (tmp_path / "broken.py").write_text("import os\nraise RuntimeError('bad config')\n")
    with pytest.raises(UserCodeError) as info:
        load_callable(f"{tmp_path}/broken.py:make")
    assert "bad config" in info.value.message
    tb = info.value.user_traceback()
    assert "broken.py" in tb and "pipediag" + os.sep + "builder" not in tb


def test_missing_module_is_a_usage_error():
    with pytest.raises(UsageError, match="no module named 'no_such_pkg_xyz'"):
        load_callable("no_such_pkg_xyz.data:make")


def test_module_spec_loads():
    fn = load_callable("os.path:join")
    assert fn("a", "b") == os.path.join("a", "b")


def test_not_callable_is_a_usage_error():
    with pytest.raises(UsageError, match="not a function"):
        load_callable("os:sep")


def test_parse_kwarg_reads_literals():
    assert parse_kwarg("n=3") == ("n", 3)
    assert parse_kwarg("cache=True") == ("cache", True)
    assert parse_kwarg("path=/data/x") == ("path", "/data/x")
    with pytest.raises(UsageError):
        parse_kwarg("novalue")


def test_call_user_rejects_unknown_parameters_and_wraps_errors():
    def make(batch_size=8):
        raise ValueError("boom")

    with pytest.raises(UsageError, match="takes no parameter scale"):
        call_user(make, {"scale": 2}, "dataset builder")
    with pytest.raises(UserCodeError, match="boom"):
        call_user(make, {"batch_size": 4}, "dataset builder")
