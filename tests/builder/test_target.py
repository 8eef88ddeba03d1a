import os

import pytest

from pipediag.builder.target import call_user, load_callable, missing_parameters, parse_kwarg, parse_kwargs, parse_spec
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


def test_a_sys_exit_on_import_or_in_a_model_builder_is_the_users_exit_said_with_its_code(tmp_path):
    """A script's own argparse at module level reads pipediag's command line and exits 2; a
    model builder may call sys.exit too. Each is the user's code exiting: said, never obeyed."""
    (tmp_path / "script.py").write_text("import argparse\nargparse.ArgumentParser().parse_args(['--nope'])\n")
    with pytest.raises(UserCodeError) as info:
        load_callable(f"{tmp_path}/script.py:make")
    assert info.value.exited and info.value.message.startswith(f"your file {tmp_path}/script.py exited: sys.exit(2) at")
    assert info.value.message.endswith("script.py:2")  # the user's line, not argparse's
    assert "if __name__ == \"__main__\":" in info.value.hint

    def make_model():
        raise SystemExit("no GPU, giving up")

    with pytest.raises(UserCodeError, match=r"your model builder exited: sys.exit\('no GPU, giving up'\)"):
        call_user(make_model, {}, "model builder")


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


def test_true_false_none_in_any_case_are_not_truthy_strings():
    assert parse_kwarg("parallel=false") == ("parallel", False)
    assert parse_kwarg("parallel=TRUE") == ("parallel", True)
    assert parse_kwarg("limit=none") == ("limit", None)
    assert parse_kwarg("mode=fast") == ("mode", "fast")  # any other word stays a string
    assert parse_kwarg("version=1.2.3") == ("version", "1.2.3")


@pytest.mark.parametrize("text, kind", [("sizes=[1,2", "list"), ("shape=(3, 4", "tuple"), ("opts={'a': 1",
                                        "dict or set"), ("name='abc", "string")])
def test_an_arg_that_opens_like_a_literal_must_parse(text, kind):
    with pytest.raises(UsageError) as info:
        parse_kwarg(text)
    assert f"looks like a Python {kind} but does not parse" in info.value.message
    assert "quote it for the shell" in info.value.hint


def test_an_arg_given_twice_is_refused():
    assert parse_kwargs(["a=1", "b=x"]) == {"a": 1, "b": "x"}
    with pytest.raises(UsageError, match="--arg-b a is given twice") as info:
        parse_kwargs(["a=1", "a=2"], "--arg-b")
    assert "give each parameter once" in info.value.hint


def test_a_builder_missing_batch_size_points_at_the_option():
    def make(batch_size, path):
        raise AssertionError("never called")

    with pytest.raises(UsageError) as info:
        call_user(make, {}, "dataset builder")
    assert "needs batch_size, path" in info.value.message
    assert "--batch-size N" in info.value.hint and "--arg path=VALUE" in info.value.hint
    with pytest.raises(UsageError) as info:
        call_user(make, {"batch_size": 8}, "dataset builder")
    assert "needs path" in info.value.message and "--batch-size" not in info.value.hint


def test_a_model_builder_with_parameters_is_told_it_is_called_bare():
    def build(units):
        raise AssertionError("never called")

    with pytest.raises(UsageError) as info:
        call_user(build, {}, "model builder")
    assert "with no arguments" in info.value.hint and "units" in info.value.hint
    assert missing_parameters(lambda *a, k=1, **kw: None, {}) == []  # defaults and varargs need nothing
