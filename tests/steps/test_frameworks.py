"""JAX and PyTorch steps (CPU builds): synchronisation, framework detection, OOM, dlpack."""

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is in the test extra: pip install -e '.[test]'")
torch = pytest.importorskip("torch", reason="PyTorch is in the test extra: pip install -e '.[test]'")
import jax.numpy as jnp  # noqa: E402

from pipediag.oom import framework_of, is_out_of_memory  # noqa: E402
from pipediag.steps.sync import HOST, DeviceBarrier, wait_until_computed  # noqa: E402
from pipediag.steps.user_step import user_step  # noqa: E402
from tests.fixtures import frameworks as F  # noqa: E402


def heavy():
    """A computation long enough on two cores that asynchronous dispatch returns before it ends."""
    a = jnp.ones((1500, 1500))

    @jax.jit
    def f(a):
        for _ in range(6):
            a = jnp.tanh(a @ a / 1500)
        return a

    f(a).block_until_ready()  # compile outside the measurement
    return f, a


def test_results_are_recognised_by_framework():
    assert wait_until_computed(jnp.ones(3)) == "jax"
    assert wait_until_computed({"loss": torch.ones(3)}) == "torch"
    assert wait_until_computed([np.ones(3), 1.0]) == HOST
    assert wait_until_computed(None) is None
    assert wait_until_computed(((), {})) is None


def test_user_step_returns_only_once_jax_has_computed():
    f, a = heavy()
    if f(a).is_ready():
        pytest.skip("JAX dispatch finished at once here: nothing to wait for")
    step = user_step(lambda batch: f(batch), "heavy", "numpy")
    assert step.run(a).is_ready()
    assert step.observed().framework == "jax"
    assert "block_until_ready" in step.observed().sync


def test_a_step_that_returns_nothing_gets_a_device_barrier():
    f, a = heavy()
    state = {}

    def silent(batch):
        state["out"] = f(batch)  # dispatched, not waited for, and not returned

    step = user_step(silent, "silent", "numpy")
    step.run(a)
    assert state["out"].is_ready()  # the barrier queued behind the step's work and waited
    observed = step.observed()
    assert observed.framework is None and "returned nothing to wait on" in observed.sync and "jax" in observed.sync


def test_device_barrier_names_what_it_waits_for():
    jnp.ones(1).block_until_ready()
    assert "jax" in DeviceBarrier().wait()


def test_torch_cpu_step_needs_no_cuda_sync():
    step = user_step(F.torch_step(), "torch_step", "numpy")
    loss = step.run((np.ones((8, 32), "float32"), np.arange(8) % 4))
    assert float(loss) > 0
    assert step.observed().framework == "torch"


def test_real_jax_and_torch_out_of_memory_errors_are_recognised():
    with pytest.raises(Exception) as jax_oom:
        jnp.zeros((2**44,), jnp.uint8).block_until_ready()
    with pytest.raises(Exception) as torch_oom:
        torch.empty(2**46, dtype=torch.uint8)
    assert is_out_of_memory(jax_oom.value) and framework_of(jax_oom.value) == "jax"
    assert is_out_of_memory(torch_oom.value) and framework_of(torch_oom.value) == "torch"
    assert not is_out_of_memory(ValueError("shapes (3,) and (4,) not aligned"))
