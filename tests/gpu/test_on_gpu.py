"""On a real NVIDIA GPU (the H200 validation runs these): NVML and GPM readings under load, JAX
and PyTorch device memory, synchronisation, out-of-memory errors, and the memory limit's order.

Marked `gpu`: skipped wherever NVML finds no GPU (tests/conftest.py says why).
"""

import os
import subprocess
import sys
import time

import pytest

from pipediag.samples.gpu import GpuReader

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _jax_gpu():
    jax = pytest.importorskip("jax")
    try:
        devices = [d for d in jax.local_devices() if d.platform != "cpu"]
    except RuntimeError as error:
        pytest.skip(f"JAX has no GPU backend: {error}")
    if not devices:
        pytest.skip("JAX sees no GPU")
    return jax, devices[0]


def test_nvml_reads_the_basics_and_gpm_sees_a_matmul_load():
    jax, device = _jax_gpu()
    jnp = jax.numpy
    reader = GpuReader().open()
    assert reader.available, reader.unavailable_reason
    a = jax.device_put(jnp.ones((8192, 8192), jnp.bfloat16), device)
    f = jax.jit(lambda a: (a @ a).sum())
    f(a).block_until_ready()
    time.sleep(0.15)  # GPM wants > 100 ms between samples
    reader.read()  # start the GPM interval here, after compiling
    end = time.monotonic() + 0.6
    while time.monotonic() < end:
        f(a).block_until_ready()
    reading = reader.read()[0]
    gpm, why_not = reader.gpm_available, reader.metric_reasons.get("gpm_sm_active_pct")
    reader.close()  # forgets the devices: ask about GPM before (the H200 run once skipped here for that)
    assert reading.memory_total_bytes > 0 and reading.memory_used_bytes > 0
    assert reading.util_pct is not None and reading.power_w is not None and reading.sm_clock_mhz > 0
    if not gpm:
        pytest.skip(f"this GPU has no GPM: {why_not}")
    assert reading.gpm_sm_active_pct > 10, reading  # a stream of 8192^3 bf16 matmuls fills the SMs
    assert reading.gpm_tensor_active_pct > 5, reading


def test_jax_device_memory_is_read_from_memory_stats():
    jax, device = _jax_gpu()
    from pipediag.steps.device_memory import DeviceMemory

    memory = DeviceMemory(lambda: "jax")
    memory.start()
    x = jax.device_put(jax.numpy.ones((256, 2**20), jax.numpy.float32), device)  # 1 GiB
    x.block_until_ready()
    reading = memory.stop()
    assert reading.framework == "jax" and reading.peak_bytes >= 2**30 and reading.limit_bytes > 2**30
    del x


def test_jax_step_returning_nothing_is_waited_for_on_the_gpu():
    jax, device = _jax_gpu()
    from pipediag.steps.user_step import user_step

    a = jax.device_put(jax.numpy.ones((8192, 8192), jax.numpy.float32), device)
    f = jax.jit(lambda a: jax.numpy.tanh(a @ a) @ a)
    f(a).block_until_ready()
    state = {}

    def silent(batch):
        state["out"] = f(batch)

    step = user_step(silent, "silent", "numpy")
    step.run(a)
    assert state["out"].is_ready()
    assert "jax" in step.observed().sync


def test_jax_gpu_out_of_memory_is_recognised():
    jax, device = _jax_gpu()
    from pipediag.oom import framework_of, is_out_of_memory

    with pytest.raises(Exception) as info:
        jax.device_put(jax.numpy.zeros((2**38,), jax.numpy.float32), device).block_until_ready()  # 1 TiB
    assert is_out_of_memory(info.value), repr(info.value)
    assert framework_of(info.value) == "jax"


def test_torch_cuda_memory_sync_and_oom():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    from pipediag.oom import framework_of, is_out_of_memory
    from pipediag.steps.device_memory import DeviceMemory
    from pipediag.steps.user_step import user_step

    torch.ones(1, device="cuda")
    memory = DeviceMemory(lambda: "torch")
    memory.start()
    a = torch.ones((4096, 4096), device="cuda")
    step = user_step(lambda batch: batch @ batch, "mm", "numpy")
    step.run(a)
    reading = memory.stop()
    assert reading.framework == "torch" and reading.peak_bytes >= 2 * 4096 * 4096 * 4
    assert step.observed().framework == "torch"
    with pytest.raises(Exception) as info:
        torch.empty(2**40, dtype=torch.float32, device="cuda")
    assert is_out_of_memory(info.value) and framework_of(info.value) == "torch"


def test_memory_limit_set_before_jax_starts_caps_its_allocator():
    """In a fresh process: the order the sweep uses (limit first, then the user's JAX code)."""
    pytest.importorskip("jax")
    code = (
        "from pipediag.backends.memory_limit import MemoryLimit, before_user_code\n"
        "from pipediag.samples.gpu import GpuReader\n"
        "r = GpuReader().open(); total = r.devices[0].memory_total_bytes; r.close()\n"
        "limit = MemoryLimit(3072 * 2**20, total); before_user_code(limit)\n"
        "import jax\n"
        "d = [d for d in jax.local_devices() if d.platform != 'cpu'][0]\n"
        "print(d.memory_stats()['bytes_limit'], limit.limit_bytes)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got, wanted = (int(v) for v in out.stdout.split()[-2:])
    assert abs(got - wanted) <= 0.05 * wanted, (got, wanted)  # CUDA's total is NVML's less a reserve
