"""`--model` with Keras 3 on the JAX and PyTorch backends, run as users run it: KERAS_BACKEND must
be set before Keras is first imported, so each backend gets a process of its own."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tensorflow")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = "tests/fixtures/pipelines.py"


def run(backend, *args, timeout=300):
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="100", KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


@pytest.mark.slow
@pytest.mark.parametrize("backend, module", [("jax", "jax"), ("torch", "torch")])
def test_diagnose_a_keras_model_on_another_backend(backend, module, backend_process):
    pytest.importorskip(module)
    d = backend_process(backend)["diagnose"]
    assert d["step"]["framework"] == backend and d["step"]["batch_format"] == f"keras-{backend}"
    assert f"on the Keras {backend} backend" in d["step"]["description"]
    assert "NumPy values" in d["step"]["sync"]
    assert d["modes"]["synthetic"]["steps"] > 0 and d["modes"]["pipeline"]["steps"] > 0
    assert d["verdict"]["bottleneck"] in ("input", "compute", "host", "inconclusive")
    handover = d["handover"]
    assert handover["batch_format"] == f"keras-{backend}" and handover["ms_mean"] > 0
    assert handover["transfer_ms_mean"] is None and "no device copy" in handover["transfer_text"]


# Each part below runs in the backend's one process (`backend_process`), as a function of its own,
# and hands back what its test reads (or the traceback it raised, which fails that test alone).
CONVERT = """
def convert(fmt):
    import numpy as np
    import tensorflow as tf
    from pipediag.modes.feeds import BatchFeed, constant_feed, same_batch
    ds = tf.data.Dataset.from_tensor_slices((np.arange(12, dtype='float32').reshape(6, 2), np.arange(6))).batch(3)
    feed = BatchFeed(ds, fmt)
    first, second = feed(), feed()
    third = feed()  # the dataset ended and started again, as an epoch loop does
    const = constant_feed(next(iter(ds)), fmt)()
    return {
        "types": sorted({f"{type(v).__module__.split('.')[0]}.{type(v).__name__}" for v in (*first, *const)}),
        "values": np.asarray(second[0]).tolist(), "restarts": feed.restarts,
        # compare's and the tuned check's comparisons: batches of one feed against another's
        "same_again": same_batch(first, BatchFeed(ds, fmt)()), "differs": not same_batch(first, second),
    }
"""


@pytest.mark.parametrize("backend, module, types", [
    ("jax", "jax", ["numpy.ndarray"]),
    ("torch", "torch", ["torch.Tensor"]),
])
@pytest.mark.slow
def test_batches_are_converted_as_keras_fit_converts_them(backend, module, types, backend_process):
    pytest.importorskip(module)
    got = backend_process(backend)["convert"]
    assert got["types"] == types
    assert np.array_equal(got["values"], [[6.0, 7.0], [8.0, 9.0], [10.0, 11.0]])
    assert got["restarts"] == 1 and got["same_again"] and got["differs"]


FIT = """
def fit():
    from tests.fixtures.pipelines import serial_sleep_map, small_model
    from pipediag.keras import InputMonitor
    monitor = InputMonitor(verbose=0, warmup_steps=2)
    small_model().fit(serial_sleep_map(batch_size=4), epochs=1, steps_per_epoch=30, callbacks=[monitor], verbose=0)
    d = monitor.diagnosis
    p = d.modes.get("pipeline")
    return {"bottleneck": d.verdict.bottleneck, "reason": d.verdict.reason, "evidence": list(d.verdict.evidence),
            "steps": None if p is None else p.steps, "wait": None if p is None else p.input_wait_frac}
"""


@pytest.mark.slow
def test_input_monitor_times_the_wait_inside_fit_on_jax(backend_process):
    pytest.importorskip("jax")
    got = backend_process("jax")["fit"]
    # 3 ms of sleep per element, 4 elements a batch, a tiny model: almost all of fit is the wait
    assert got["steps"] == 28 and got["wait"] > 0.5
    assert got["bottleneck"] == "input"


@pytest.mark.slow
def test_input_monitor_on_pytorch_says_why_it_cannot_time_the_wait(backend_process):
    pytest.importorskip("torch")
    got = backend_process("torch")["fit"]
    assert got["bottleneck"] == "inconclusive"
    assert "PyTorch backend" in got["reason"] + " ".join(got["evidence"])


COMMANDS = """
def commands(argvs):
    from pipediag.cli import main
    for argv in argvs:
        code = main(argv)
        if code != 0:
            raise SystemExit(f"{argv[0]} exited {code}")
    return "ok"
"""

CHILD = CONVERT + FIT + COMMANDS + """
import json, sys, traceback
parts = {}
for name, call in (("convert", lambda: convert(sys.argv[1])), ("fit", fit),
                   ("commands", lambda: commands(json.loads(sys.argv[2])))):
    try:
        parts[name] = {"value": call()}
    except BaseException:  # one part's failure is its test's, not the others'
        parts[name] = {"error": traceback.format_exc()}
print(json.dumps(parts))
"""


@pytest.fixture(scope="module")
def backend_process(tmp_path_factory):
    """`backend_process(backend)[part]`: what one fresh interpreter of that Keras backend gave, run
    once for the tests of this module that read it: the batch conversion ('convert'), InputMonitor
    inside a fit ('fit'), and the JSON that diagnose, compare, sweep and scale wrote with `--model`
    (by `pipediag.cli.main` one after another; by the command's name). The backend needs a process
    of its own, not one per test. A part that raised fails its own tests, with its traceback.
    Structure, not timing: compare runs 3 short rounds (not up to its 15-s cap)."""
    spec = f"{FIXTURES}:small_vectors"
    runs = {}

    def of(backend):
        if backend not in runs:
            folder = tmp_path_factory.mktemp(f"keras-{backend}")
            commands = [("diagnose", spec, "--max-seconds", "0.5"),
                        ("compare", spec, spec, "--arg-b", "batch_size=32", "--max-seconds", "15", "--max-rounds", "3",
                         "--turn-seconds", "0.1"),
                        ("sweep", spec, "--batch-sizes", "8,16", "--max-seconds", "0.5"),
                        ("scale", spec, "--workers", "1", "--max-seconds", "1")]
            argvs = [[command, *args, "--model", f"{FIXTURES}:small_model", "--quiet", "--json",
                      str(folder / f"{command}.json")] for command, *args in commands]
            runs[backend] = (folder, run(backend, "-c", CHILD, f"keras-{backend}", json.dumps(argvs)))
        return _Parts(*runs[backend])

    return of


class _Parts:
    def __init__(self, folder, done):
        self.folder, self.done = folder, done

    def __getitem__(self, name):
        assert self.done.returncode == 0, self.done.stderr[-3000:]
        parts = json.loads(self.done.stdout.strip().splitlines()[-1])
        part = parts.get(name, parts["commands"])  # a command's name: its JSON, once the commands ran
        assert "error" not in part, part.get("error", "") + self.done.stderr[-3000:]
        return part["value"] if name in parts else json.loads((self.folder / f"{name}.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("backend, module", [("jax", "jax"), ("torch", "torch")])
def test_compare_sweep_and_scale_take_a_keras_model_on_another_backend(backend, module, backend_process):
    """The other entry points with `--model` on JAX and PyTorch (issue 14): each runs the model's
    real train step, fed as Keras' fit feeds that backend, and writes its result."""
    pytest.importorskip(module)
    runs = backend_process(backend)
    compared, swept, scaled = runs["compare"], runs["sweep"], runs["scale"]
    assert compared["step"]["framework"] == backend and compared["step"]["batch_format"] == f"keras-{backend}"
    assert compared["comparison"]["rounds"] >= 2, compared["comparison"]
    assert [p["batch_size"] for p in swept["points"]] == [8, 16]
    assert all(p["examples_per_sec"] and p["pipeline_examples_per_sec"] for p in swept["points"]), swept["points"]
    assert scaled["step"]["framework"] == backend
    assert [c["workers"] for c in scaled["counts"]] == [1], scaled["counts"]
    assert scaled["counts"][0]["fed"]["batches_per_sec"] > 0, scaled["counts"]
