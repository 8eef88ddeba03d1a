"""--gpu-memory-limit: what is set for each framework, and when it cannot be."""

import sys

import pytest

from pipediag.backends import memory_limit as ml
from pipediag.records.memory import MemoryLimit


def test_jax_fraction_is_set_in_the_environment_before_jax_starts(monkeypatch):
    monkeypatch.setattr(ml, "jax_backend_started", lambda: False)
    monkeypatch.setattr(ml, "_limit_tensorflow", lambda limit: None)
    env = {"XLA_PYTHON_CLIENT_MEM_FRACTION": ".9"}
    limit = MemoryLimit(4096 * 2**20, 140 * 2**30)
    ml.before_user_code(limit, env)
    assert env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == f"{4096 / (140 * 1024):.4f}"
    assert limit.applied[0].startswith("jax: XLA_PYTHON_CLIENT_MEM_FRACTION=0.0286 (was .9)")
    assert limit.text == "a 4096 MiB card simulated on 140.0 GiB"


def test_a_running_jax_backend_is_reported_not_pretended(monkeypatch):
    monkeypatch.setattr(ml, "jax_backend_started", lambda: True)
    monkeypatch.setattr(ml, "_limit_tensorflow", lambda limit: None)
    env = {}
    limit = MemoryLimit(2**30, 2**34)
    ml.before_user_code(limit, env)
    assert env == {} and "had already started" in limit.not_applied[0]


def test_round_trip():
    limit = MemoryLimit(2**30, 2**34, ["jax: x"], ["tensorflow: y"])
    assert MemoryLimit.from_dict(limit.to_dict()) == limit
    assert limit.to_dict()["fraction"] == 1 / 16


def test_jax_backend_started_follows_jax_itself():
    jax = pytest.importorskip("jax")
    jax.numpy.zeros(1).block_until_ready()  # any computation starts a backend
    assert ml.jax_backend_started()


def test_tensorflow_cpu_build_has_no_gpu_to_limit():
    pytest.importorskip("tensorflow")
    limit = MemoryLimit(2**30, 2**34)
    ml._limit_tensorflow(limit)
    assert limit.applied == [] and limit.not_applied == []  # nothing to limit, nothing to report


def test_torch_without_cuda_is_left_alone(monkeypatch):
    torch = pytest.importorskip("torch")
    assert "torch" in sys.modules and not torch.cuda.is_available()
    limit = MemoryLimit(2**30, 2**34)
    ml.after_user_code(limit)
    assert limit.applied == []
