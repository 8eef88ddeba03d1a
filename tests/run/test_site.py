"""Construction sites: the innermost frame of the user's code, and the function `pipediag fix`
may patch for a run (or the reason it may not)."""

import os
import textwrap

import pytest

from pipediag.errors import UsageError
from pipediag.run.site import Site, is_user_file, patch_target, user_site


def test_the_users_frame_is_found_and_libraries_are_not_the_user():
    here = user_site(1)
    assert here.file == os.path.abspath(__file__) and here.function == "test_the_users_frame_is_found_and_libraries_are_not_the_user"
    assert not is_user_file(os.__file__) and not is_user_file(pytest.__file__)
    assert not is_user_file("<string>")


def _script(tmp_path, body: str) -> str:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_a_guarded_script_with_a_builder_function_can_be_patched(tmp_path):
    path = _script(tmp_path, '''
        """Train."""
        import tensorflow as tf
        AUTOTUNE = tf.data.AUTOTUNE
        def make_dataset(batch_size=32):
            return tf.data.Dataset.range(10).batch(batch_size)
        if __name__ == "__main__":
            ds = make_dataset()
        ''')
    assert patch_target(Site(path, 6, "make_dataset").to_dict()) == f"{path}:make_dataset"


@pytest.mark.parametrize("body, function, says", [
    ("import tensorflow as tf\nds = tf.data.Dataset.range(3)\n", "<module>", "top level"),
    ("def outer():\n    def make():\n        pass\n    return make()\n", "make", "not a top-level function"),
    ("def make(n):\n    return n\n", "make", "without defaults"),
    ("def make():\n    return 1\nmake()\n", "make", "runs code when imported (line 3)"),
])
def test_sites_that_cannot_be_patched_say_why(tmp_path, body, function, says):
    path = _script(tmp_path, body)
    with pytest.raises(UsageError) as raised:
        patch_target(Site(path, 2, function).to_dict())
    assert says in raised.value.message and raised.value.hint
