"""Where a step's results live (steps.placement), on real framework values of this machine."""

import numpy as np
import pytest

from pipediag.steps.placement import accelerators, devices_of, in_order


def test_plain_values_live_on_no_device():
    assert devices_of({"loss": np.float32(1.0), "acc": [0.5, 0.25]}) == ()
    assert devices_of(None) == ()


def test_a_torch_cpu_tensor():
    torch = pytest.importorskip("torch")
    assert devices_of([torch.ones(2), {"n": torch.zeros(1)}]) == ("cpu:0",)


def test_names_sort_by_kind_then_index():
    assert in_order({"gpu:10", "gpu:2", "cpu:0"}) == ("cpu:0", "gpu:2", "gpu:10")


def test_the_work_ran_on_the_accelerators_when_there_are_any():
    assert accelerators(("cpu:0", "gpu:0", "gpu:1")) == ("gpu:0", "gpu:1")  # a host scalar beside them
    assert accelerators(("cpu:0", "cpu:1")) == ("cpu:0", "cpu:1")  # host devices (JAX's forced count)


def test_the_devices_survive_the_json_round_trip():
    import json

    from pipediag.records.step import StepInfo

    info = StepInfo("user", "a mesh step", "numpy", "jax", "block_until_ready()", ("gpu:0", "gpu:1"))
    assert StepInfo.from_dict(json.loads(json.dumps(info.to_dict()))) == info
    assert StepInfo.from_dict({"kind": "user", "description": "saved before devices were kept"}).devices == ()
