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

from pipediag.steps.oom import is_out_of_memory  # noqa: E402
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
