"""The H200 scenarios (scenarios/gpu/) run here on the CPU builds at toy sizes: each builds its
pipeline, its JAX step compiles and trains, and the memory one really runs out of memory. The
GPU run itself is benchmarks/gpu_validation.py; this keeps its code from breaking unseen."""

import importlib.util
import os
import sys

import numpy as np
import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("jax", reason="JAX is in the test extra: pip install -e '.[test]'")

from pipediag.oom import is_out_of_memory  # noqa: E402
from pipediag.steps.user_step import user_step  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = os.path.join(ROOT, "scenarios", "gpu")
# Toy sizes for a 2-core CPU: the same code, a thousandth of the work.
SMALL = {
    "host": {"OPS": 4},
    "small_kernels": {"LAYERS": 4, "FEATURES": 32},
    "compute": {"FEATURES": 16, "WIDTH": 64, "LAYERS": 2, "EXPAND": 2},
    "bandwidth": {"STATE": 2**12, "ROUNDS": 2},
    "input": {"SLEEP_S": 0.0},
    "sweep": {"WIDTH": 32, "HIDDEN": 64},
    "tiny_step": {},
    "tiny_step_tf_batches": {},
}


def load(name, **constants):
    if SCENARIOS not in sys.path:
        sys.path.insert(0, SCENARIOS)
    spec = importlib.util.spec_from_file_location(f"gpu_scenario_{name}", os.path.join(SCENARIOS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for key, value in constants.items():
        setattr(module, key, value)
    return module


@pytest.mark.parametrize("name", sorted(SMALL))
def test_scenario_builds_and_trains_at_toy_size(name):
    module = load(name, **SMALL[name])
    dataset = module.make_dataset(batch_size=8)
    step = user_step(module.make_step(), name, "numpy")
    batches = dataset.take(3).as_numpy_iterator()
    losses = [float(np.asarray(step.run(batch)).ravel()[0]) for batch in batches]
    assert all(np.isfinite(losses))
    assert step.observed().framework == "jax"


def test_memory_scenario_really_runs_out_of_memory():
    module = load("memory", PER_EXAMPLE=2**40)  # 4 TiB per example: beyond this machine too
    step = user_step(module.make_step(), "memory", "numpy")
    with pytest.raises(Exception) as info:
        step.run(next(module.make_dataset(batch_size=4).as_numpy_iterator()))
    assert is_out_of_memory(info.value)


def test_image_step_trains_on_the_demo_pipeline():
    from pipediag import demo

    module = load("image_step", WIDTH=16)
    step = user_step(module.make_step(), "image_step", "numpy")
    losses = [float(step.run(batch)) for batch in demo.make_dataset(batch_size=4, images=8).take(3).as_numpy_iterator()]
    assert all(np.isfinite(losses)) and step.observed().framework == "jax"


def test_torch_scenario_trains_on_its_py_function_pipeline_and_the_expert_form_matches():
    pytest.importorskip("torch")
    module = load("torch_py_function", EXAMPLES=64)
    step = user_step(module.make_step(), "torch_py_function", "numpy")
    batches = list(module.make_dataset(batch_size=8).take(2).as_numpy_iterator())
    losses = [float(step.run(batch)) for batch in batches]
    assert all(np.isfinite(losses)) and step.observed().framework == "torch"
    expert = next(module.expert_dataset(batch_size=8).as_numpy_iterator())
    np.testing.assert_allclose(expert[0], batches[0][0], rtol=1e-5, atol=1e-5)  # the same augmentation


def test_tiny_step_pipeline_is_in_memory_so_no_cache_is_planned():
    from pipediag.builder.graph import PipelineGraph
    from pipediag.tuner.cache_rules import cache_point

    module = load("tiny_step")
    stages = PipelineGraph.from_dataset(module.make_dataset()).stages()
    assert [s.kind for s in stages][:2] == ["source", "batch"]
    assert cache_point(stages) is None


KERAS_SCENARIOS = {"keras_input": {"SLEEP_S": 0.0, "HIDDEN": 8}, "keras_compute": {"WIDTH": 16, "LAYERS": 1}}


@pytest.fixture(scope="module")
def keras_scenarios_on_jax():
    """Each Keras scenario's two train steps on JAX, all in one fresh process: KERAS_BACKEND must be
    set before Keras is first imported, so not this one; one process serves every scenario."""
    import json
    import subprocess

    code = (
        "import json, sys, numpy as np\n"
        f"sys.path.insert(0, {SCENARIOS!r})\n"
        "from tests.test_gpu_scenarios import load\n"
        "from pipediag.modes.feeds import BatchFeed\n"
        "from pipediag.steps.keras_step import keras_step\n"
        "got = {}\n"
        f"for name, sizes in {KERAS_SCENARIOS!r}.items():\n"
        "    m = load(name, **sizes)\n"
        "    step = keras_step(m.make_model(), 'scenario')\n"
        "    feed = BatchFeed(m.make_dataset(batch_size=8).take(2), step.info.batch_format)\n"
        "    logs = [step.run(feed()) for _ in range(2)]\n"
        "    got[name] = {'format': step.info.batch_format, 'framework': step.described().framework,\n"
        "                 'loss': float(logs[-1]['loss'])}\n"
        "print(json.dumps(got))\n"
    )
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KERAS_SCENARIOS))
def test_keras_scenario_trains_on_jax_in_a_fresh_process(name, keras_scenarios_on_jax):
    got = keras_scenarios_on_jax[name]
    assert got["format"] == "keras-jax" and got["framework"] == "jax" and np.isfinite(got["loss"])


def test_a_keras_scenario_on_the_wrong_backend_says_how_to_run_it():
    import keras

    if keras.backend.backend() == "jax":
        pytest.skip("this process runs Keras on JAX")
    with pytest.raises(RuntimeError, match="run it with KERAS_BACKEND=jax"):
        load("keras_compute").make_model()


# scenarios/gpu/tf_*.py at toy sizes: (name, constants, batch size)
TF_KERAS = (("tf_keras_input", {"SIDE": 16}, 4), ("tf_keras_compute", {"WIDTH": 32}, 8),
            ("tf_keras_memory", {"WIDTH": 64}, 4), ("tf_tiny_step", {}, 8))


@pytest.mark.slow
def test_tensorflow_gpu_scenarios_build_and_train_at_toy_size():
    """scenarios/gpu/tf_keras_*.py (Keras on KERAS_BACKEND=tensorflow, run on the H200 with
    TensorFlow's GPU build) at toy sizes on the CPU, in this process: Keras reads its backend once,
    and the tests' Keras runs on TensorFlow, the backend these scenarios need."""
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("this process runs Keras on another backend; the tf_* scenarios need KERAS_BACKEND=tensorflow")
    for name, constants, batch in TF_KERAS:
        module = load(name, **constants)
        x, y = next(iter(module.make_dataset(batch_size=batch)))
        loss = module.make_model().train_on_batch(x, y)
        assert np.isfinite(float(np.ravel(loss)[0])), (name, loss)
