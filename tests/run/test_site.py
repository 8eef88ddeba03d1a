"""Construction sites: the innermost frame of the user's code, and the function `pipediag fix`
may patch for a run (or the reason it may not)."""

import os
import textwrap

import pytest

from pipediag.errors import UsageError
from pipediag.run.site import Site, is_user_file, library_roots, patch_target, user_site
from tests.run.scripts import ROOT


def test_the_users_frame_is_found_and_libraries_are_not_the_user():
    here = user_site(1)
    assert here.file == os.path.abspath(__file__) and here.function == "test_the_users_frame_is_found_and_libraries_are_not_the_user"
    assert not is_user_file(os.__file__) and not is_user_file(pytest.__file__)
    assert not is_user_file("<string>")


def test_the_frameworks_are_no_users_code_wherever_they_are_installed(tmp_path):
    """Without any standard folder (TensorFlow on PYTHONPATH, as on the H200's /tmp/site), the
    frameworks' own folders still mark their files as library code; a script beside them is not."""
    import tensorflow as tf

    roots = library_roots(standard=set())
    tf_file = os.path.abspath(tf.__file__)
    assert any(tf_file.startswith(r) for r in roots), roots
    assert not any(str(tmp_path / "train.py").startswith(r) for r in roots)


FIT_SCRIPT = """
import numpy as np, tensorflow as tf
x = np.random.rand(640, 8).astype(np.float32)
y = (x.sum(axis=1) > 4).astype(np.float32)
train = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
val = tf.data.Dataset.from_tensor_slices((x[:64], y[:64])).batch(32)
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(8), tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(train, validation_data=val, epochs=60, verbose=0)
"""


@pytest.mark.slow
def test_a_tensorflow_outside_site_packages_is_not_taken_for_the_script(tmp_path):
    """TensorFlow and Keras imported from a folder on PYTHONPATH (links to the installed ones): the
    dataset is still built at the script's line, and fit's own iterators are not hooked as the
    script's loops (they were, on the H200: the observed steps went missing, no verdict)."""
    import subprocess
    import sys

    import keras
    import tensorflow as tf

    elsewhere = tmp_path / "site"
    elsewhere.mkdir()
    for module in (tf, keras):
        os.symlink(os.path.dirname(module.__file__), elsewhere / module.__name__)
    script = tmp_path / "train.py"
    script.write_text(FIT_SCRIPT)
    out = tmp_path / "run.json"
    env = dict(os.environ, PYTHONPATH=f"{elsewhere}{os.pathsep}{ROOT}", TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, "-m", "pipediag", "run", "--quiet", "--no-tuned", "--no-anatomy",
                             "--window-seconds", "1", "--json", str(out), str(script)],
                            capture_output=True, text=True, env=env, timeout=300, cwd=str(tmp_path))
    assert out.exists(), result.stderr[-2000:]
    import json

    saved = json.loads(out.read_text())
    assert saved["settings"]["dataset_site"]["file"] == str(script), saved["settings"]["dataset_site"]
    assert saved["settings"]["dataset_site"]["line"] == 5
    assert [d["kind"] for d in saved["settings"]["datasets"]] == ["fit"], saved["settings"]["datasets"]
    assert saved["modes"]["pipeline"] is not None and saved["modes"]["pipeline"]["steps"] >= 10, saved["notes"]


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
