"""The environment's GPU facts against the scripted NVML (no TensorFlow needed)."""

import json
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console

from pipediag.backends.fake_nvml import FakeGpu, FakeNvml
from pipediag.records.environment import Environment, capability_allows, driver_against_build, memory_growth_text
from pipediag.report.terminal.env import render_environment
from pipediag.samples.environment import collect, with_warnings
from tests.summaries import environment as make_environment


def text(renderable):
    console = Console(width=120, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_gpm_support_is_part_of_the_environment():
    with_gpm = collect(with_tensorflow=False, nvml_lib=FakeNvml([FakeGpu()]))
    without = collect(with_tensorflow=False, nvml_lib=FakeNvml([FakeGpu(gpm_supported=False)]))
    no_gpu = collect(with_tensorflow=False, nvml_lib=FakeNvml([], library_missing=True))
    assert (with_gpm.gpm_supported, with_gpm.gpm_reason) == (True, None)
    assert without.gpm_supported is False and "needs Hopper or newer" in without.gpm_reason
    assert no_gpu.gpm_supported is None
    assert re.search(r"│ GPM +│ yes: SM, tensor-core and DRAM activity", text(render_environment(with_gpm)))
    assert Environment.from_dict(without.to_dict()) == without


def test_a_jax_or_torch_step_drops_the_tensorflow_sees_no_gpu_warning():
    env = collect(with_tensorflow=False, nvml_lib=FakeNvml([FakeGpu()]))
    warned = Environment.from_dict({**env.to_dict(), "warnings": [
        "NVML sees 1 GPU(s) but TensorFlow sees none (a CPU-only build): TensorFlow steps run on the CPU.",
        "another warning"]})
    assert warned.for_step("jax").warnings == ("another warning",) == warned.for_step("torch").warnings
    assert warned.for_step("tensorflow") == warned == warned.for_step(None)


# -- pipediag env, deep (issue 19 item 2) ---------------------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def nvml_environment(gpus, **nvml):
    """An environment whose GPU side comes from the scripted NVML, TensorFlow left out."""
    return collect(with_tensorflow=False, nvml_lib=FakeNvml(gpus, **nvml))


def test_compute_capability_per_gpu_and_what_it_allows():
    env = nvml_environment([FakeGpu(), FakeGpu(name="Tesla V100 (fake)", compute_capability=(7, 0)),
                            FakeGpu(name="old (fake)", compute_capability=None)])
    ccs = {c.index: c for c in env.gpu_capabilities}
    assert ccs[0].compute_capability == "9.0" and "fp8" in ccs[0].allows and "bf16 (mixed_bfloat16)" in ccs[0].allows
    assert ccs[1].compute_capability == "7.0" and ccs[1].allows == ("fp16 tensor cores (mixed_float16)",)
    assert ccs[2].compute_capability is None and ccs[2].allows == () and "Not Supported" in ccs[2].reason
    out = text(render_environment(env))
    assert re.search(r"compute capability +│ 9.0: fp16 tensor cores \(mixed_float16\), TF32", out)
    assert re.search(r"compute capability +│ unknown \(", out)
    assert env.nvml_cuda_driver_version == "12.8" and re.search(r"driver's CUDA +│ 12.8", out)
    assert Environment.from_dict(json.loads(json.dumps(env.to_dict()))) == env


def test_capability_thresholds():
    assert capability_allows("6.1") == ("no tensor cores: mixed precision saves memory but gains little speed",)
    assert "TF32 matmuls (TensorFlow's default)" not in capability_allows("7.5")
    assert "TF32 matmuls (TensorFlow's default)" in capability_allows("8.0")
    assert "fp8" not in capability_allows("8.6") and "fp8" in capability_allows("8.9")
    assert "fp8" in capability_allows("10.0")
    assert capability_allows(None) == ()


def test_driver_against_build():
    assert driver_against_build("12.8", "12.5")[0] is True
    ok, why = driver_against_build("12.2", "12.5")
    assert ok is True and "minor version compatibility" in why
    ok, why = driver_against_build("11.8", "12.5")
    assert ok is False and "needs 12.5" in why
    assert driver_against_build(None, "12.5") == (None, "unknown (the driver's CUDA version is not known)")


def test_unknown_cuda_driver_version_has_a_reason():
    env = nvml_environment([FakeGpu()], cuda_driver_version=None)
    assert env.nvml_cuda_driver_version is None and "Not Supported" in env.reasons["nvml_cuda_driver_version"]
    no_gpu = nvml_environment([], library_missing=True)
    assert "NVML could not start" in no_gpu.reasons["nvml_driver"]


def gpu_env(tf_devices, cuda_build=True, **overrides):
    nvml = nvml_environment([FakeGpu(), FakeGpu()])
    values = dict(tensorflow_devices=tf_devices, tensorflow_cuda_build=cuda_build, gpus=nvml.gpus,
                  gpu_capabilities=nvml.gpu_capabilities, nvml_cuda_driver_version="12.8", gpu_unavailable_reason=None,
                  tensorflow_cuda_version="12.5.1" if cuda_build else None,
                  tensorflow_cudnn_version="9" if cuda_build else None)
    return with_warnings(make_environment(**{**values, **overrides}))


def test_a_cuda_build_that_sees_no_gpu_nvml_sees_names_the_cuda_libraries():
    env = gpu_env(("CPU:0",))
    warning = next(w for w in env.warnings if "TensorFlow sees none" in w)
    assert "CUDA libraries it loads are missing or do not match" in warning
    assert "built with CUDA 12.5.1, cuDNN 9" in warning and "HINT: pip install 'tensorflow[and-cuda]'" in warning
    cpu_build = gpu_env(("CPU:0",), cuda_build=False)
    assert any("a CPU-only build" in w for w in cpu_build.warnings)


def test_fewer_tensorflow_gpus_than_nvml_gpus_is_a_mismatch():
    env = gpu_env(("CPU:0", "GPU:0"), tensorflow_gpu_memory_growth=(True,))
    assert any(w.startswith("TensorFlow sees 1 GPU(s), NVML 2") and "HINT" in w for w in env.warnings)
    same = gpu_env(("CPU:0", "GPU:0", "GPU:1"), tensorflow_gpu_memory_growth=(True, True))
    assert not [w for w in same.warnings if "NVML" in w]


def test_a_driver_too_old_for_the_build_is_a_warning():
    env = gpu_env(("CPU:0", "GPU:0", "GPU:1"), tensorflow_gpu_memory_growth=(True, True),
                  nvml_cuda_driver_version="11.8")
    assert any("the driver supports CUDA 11.8 only, the build needs 12.5.1" in w and "upgrade the NVIDIA driver" in w
               for w in env.warnings)


def test_a_gpu_older_than_the_builds_kernels_is_a_warning():
    nvml = nvml_environment([FakeGpu(compute_capability=(6, 0))])
    env = with_warnings(make_environment(
        tensorflow_devices=("CPU:0", "GPU:0"), tensorflow_cuda_build=True, tensorflow_gpu_memory_growth=(True,),
        gpus=nvml.gpus, gpu_capabilities=nvml.gpu_capabilities, tensorflow_cuda_capabilities=("sm_70", "compute_90")))
    assert any("compute capability 7.0 and newer only; GPU 0 (6.0) is older" in w for w in env.warnings)


def test_memory_growth_says_what_it_means_for_sharing_the_gpu(monkeypatch):
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    off = gpu_env(("CPU:0", "GPU:0", "GPU:1"), tensorflow_gpu_memory_growth=(False, False))
    assert "another process on this GPU will run out of memory" in memory_growth_text(off)
    assert any("memory growth is off" in w for w in off.warnings)
    forced = gpu_env(("CPU:0", "GPU:0", "GPU:1"), tensorflow_gpu_memory_growth=(False, False),
                     tf_force_gpu_allow_growth="true")
    assert "the GPU can be shared" in memory_growth_text(forced)
    assert not any("memory growth is off" in w for w in forced.warnings)
    jax = gpu_env(("CPU:0",), cuda_build=False, jax_devices=("gpu:0 NVIDIA H200",),
                  xla_python_client_mem_fraction="0.5")
    assert "JAX preallocates 50% of the GPU" in memory_growth_text(jax)
    assert not any("JAX sees only" in w for w in jax.warnings)
    jax_cpu = gpu_env(("CPU:0",), cuda_build=False, jax_devices=("cpu:0",))
    assert any("JAX sees only cpu:0" in w and "jax[cuda12]" in w for w in jax_cpu.warnings)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.slow
def test_env_json_lists_every_item(tmp_path, cli_main, monkeypatch):
    pytest.importorskip("tensorflow")
    out = tmp_path / "env.json"
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2", KERAS_BACKEND="tensorflow")
    done = subprocess.run([sys.executable, "-m", "pipediag", "env", "--json", str(out)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    d = json.loads(out.read_text())
    for key in ("tensorflow_version", "tensorflow_cuda_build", "tensorflow_cuda_version", "tensorflow_cudnn_version",
                "tensorflow_devices", "tensorflow_gpu_memory_growth", "tensorflow_xla_jit", "tf_xla_flags",
                "tf_force_gpu_allow_growth", "nvml_driver", "nvml_cuda_driver_version", "gpus", "gpu_capabilities",
                "jax_version", "jax_devices", "torch_version", "torch_devices", "container", "reasons", "warnings"):
        assert key in d, key
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    piped = cli_main("env", "--json", "-")  # `pipediag env --json - | jq`: standard output, by main in this process
    assert piped.returncode == 0 and json.loads(piped.stdout)["tensorflow_version"] == d["tensorflow_version"]
    assert d["tensorflow_cuda_version"] is None and d["reasons"]["tensorflow_cuda_version"] == "a CPU-only build of TensorFlow"
    assert d["tensorflow_xla_jit"] in ("off", "autoclustering", "on")
    assert d["nvml_driver"] is None and d["reasons"]["nvml_driver"]
    assert d["container"]["cpu_source"] in ("quota", "cpuset", "affinity", "host")
    for name in ("jax_devices", "torch_devices"):  # installed here: listed; else None with a reason
        assert d[name] is not None or d["reasons"][name]
    assert "XLA" in done.stdout and "CPU limit" in done.stdout
    # What tests/test_cli.py's own `pipediag env --json` process checked, on this one's output.
    assert "tensorflow" in done.stdout and "CPU cores" in done.stdout
    assert d["tensorflow_version"] and d["cpu_logical"] >= 1
    assert d["gpus"] == [] and d["gpu_unavailable_reason"]
