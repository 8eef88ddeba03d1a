"""`pipediag run` on Keras 3 `Model.fit` (TensorFlow backend here; JAX in a subprocess): the
dataset fit got is the training dataset, validation and a second fit work, and what fit cannot
be diagnosed with is refused with the way out."""

import pytest

from tests.run.scripts import assert_windows_ran, run_command, run_here, write

MODEL = """
def make_dataset(n=2048):
    x = np.random.rand(n, 8).astype(np.float32)
    y = (x.sum(axis=1) > 4).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse", steps_per_execution=int(os.environ.get("SPE", "1")))
"""


@pytest.mark.slow
def test_fit_with_validation_and_a_second_fit_is_diagnosed_on_the_training_dataset(tmp_path):
    path = write(tmp_path, "fit.py", MODEL + """
train, val = make_dataset(), make_dataset(256)
model.fit(train, validation_data=val, epochs=1, verbose=0)  # 128 steps: short of the observation below
model.fit(train, validation_data=val, epochs=20, verbose=0)
""")
    result = run_here(path, observe_steps=150)
    d = result.diagnosis
    assert result.fault is None and d.status == "complete", (result.fault, d.notes)
    assert d.settings["hook"] == "fit"
    assert d.settings["dataset_site"]["function"] == "make_dataset"
    assert {"pipeline", "synthetic", "input_only"} <= set(d.modes)
    assert d.runs["pipeline"].steps == 150  # across both fits, the validation passes cut out
    assert "model.fit" in d.step.description


@pytest.mark.parametrize("fit_with, says", [
    ("model.fit(np.zeros((64, 8), np.float32), np.zeros(64, np.float32), verbose=0)", "from_tensor_slices"),
    ("model.fit((b for b in [(np.zeros((4, 8), np.float32), np.zeros(4, np.float32))] * 50), verbose=0)",
     "from_generator"),
])
def test_arrays_or_a_generator_given_to_fit_are_refused_with_how_to_wrap_them(tmp_path, fit_with, says):
    path = write(tmp_path, "arrays.py", MODEL + fit_with + "\nraise SystemExit('the script went on')\n")
    result = run_here(path)
    assert result.ending.how == "stopped"
    assert result.fault is not None and result.fault.exit_code == 2
    assert says in result.fault.hint and "not a tf.data.Dataset" in result.fault.message


def test_steps_per_execution_over_one_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("SPE", "4")
    path = write(tmp_path, "spe.py", MODEL + "model.fit(make_dataset(), epochs=2, verbose=0)\n")
    result = run_here(path)
    assert result.fault is not None and "steps_per_execution=4" in result.fault.message
    assert "steps_per_execution=1" in result.fault.hint


@pytest.mark.slow
def test_fit_on_the_jax_backend(tmp_path):
    path = write(tmp_path, "jaxfit.py", """
import keras
assert keras.backend.backend() == "jax"
x = np.random.rand(4096, 8).astype(np.float32)
ds = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(16)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(ds, epochs=200, verbose=0)  # the windows take fit's steps too: a fast step's synthetic window ran 1,259
""")
    out = tmp_path / "jax.json"
    p = run_command("--quiet", "--observe-steps", "10", "--window-seconds", "0.5", "--no-tuned", "--no-anatomy",
                    "--json", str(out), path, env={"KERAS_BACKEND": "jax"})
    assert p.returncode == 0, p.stderr[-3000:]
    import json

    saved = json.loads(out.read_text())
    assert saved["settings"]["hook"] == "fit" and saved["modes"]["synthetic"] is not None
    assert saved["step"]["framework"] == "jax"


@pytest.mark.slow
def test_the_pytorch_backend_is_refused_with_the_reason(tmp_path):
    path = write(tmp_path, "torchfit.py", """
import keras
x = np.random.rand(256, 8).astype(np.float32)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(16), epochs=2, verbose=0)
raise SystemExit("fit was not refused")
""")
    p = run_command("--quiet", path, env={"KERAS_BACKEND": "torch"})
    assert p.returncode == 2, p.stderr[-3000:]
    assert "PyTorch backend" in p.stderr and "HINT" in p.stderr


@pytest.mark.slow
def test_fit_goes_on_after_the_windows_with_then_continue(tmp_path):
    path = write(tmp_path, "cont.py", MODEL + """
history = model.fit(make_dataset(), epochs=15, verbose=0)  # the windows take steps of fit's epochs too
with open(sys.argv[1], "w") as f:
    f.write(str(len(history.history["loss"])))
""")
    out = tmp_path / "epochs.txt"
    result = run_here(path, str(out), then="continue")
    assert result.ending.how == "finished" and result.fault is None
    assert result.diagnosis.status == "complete"
    assert out.read_text() == "15"  # fit ran to its end
    assert any("went on with the real pipeline" in n for n in result.diagnosis.notes)


@pytest.mark.slow
def test_fit_under_a_mirrored_strategy_is_fed_per_replica(tmp_path):
    path = write(tmp_path, "mirroredfit.py", """
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
x = np.random.rand(4096, 8).astype(np.float32)
ds = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(16)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
model.fit(ds, epochs=5, verbose=0)
""")
    out = tmp_path / "mf.json"
    p = run_command("--quiet", "--observe-steps", "10", "--window-seconds", "0.5", "--no-anatomy",
                    "--json", str(out), path)
    assert p.returncode == 0, p.stderr[-3000:]
    import json

    saved = json.loads(out.read_text())
    assert saved["settings"]["hook"] == "fit"
    assert_windows_ran(saved)
    # the ready batch is handed over through the distributed iterator the windows feed fit with
    assert "experimental_distribute_dataset (MirroredStrategy, 2 replica(s))" in saved["handover"]["through"]
