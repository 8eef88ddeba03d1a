"""The machine a diagnosis ran on: Python, TensorFlow (its build, devices, memory growth, XLA),
NVML and its GPUs (driver, CUDA version, compute capability), CPUs, RAM, the container's limits,
plus the warnings a user needs before trusting the numbers. `pipediag env` prints it, with
`deep=True`: JAX's and PyTorch's devices too (importing them, and starting JAX's backend, is
kept out of a diagnosis).

Every fact is known or None; `reasons` says why a None is one. The rules that turn facts into
warnings (TensorFlow's GPUs against NVML's, the driver against the build, what a compute
capability allows) are plain functions of the facts, documented in docs/verdict.md.
"""

from __future__ import annotations

import os
import platform
from typing import Any

import psutil

from pipediag._version import __version__
from pipediag.records.container import ContainerLimits
from pipediag.records.environment import (
    NOT_DEEP,
    Environment,
    GpuCapability,
    capability_allows,
)
from pipediag.samples.container import read_limits
from pipediag.samples.environment_warnings import with_warnings
from pipediag.samples.gpu import GpuReader


def collect(*, with_tensorflow: bool = True, nvml_lib: Any | None = None,
            container: ContainerLimits | None = None, deep: bool = False) -> Environment:
    """The environment as this process sees it. `container`: the limits already read (a diagnosis
    reads them once); default: read now. `deep`: also import JAX and PyTorch (if installed) and
    list their devices, which starts JAX's backend (on a GPU it preallocates memory): only for
    `pipediag env`, never inside a diagnosis."""
    reasons: dict[str, str] = {}
    reader = GpuReader(nvml_lib).open()
    gpus, driver, reason = reader.devices, reader.driver_version, reader.unavailable_reason
    nvml_available = reader.available
    gpm = reader.gpm_available if nvml_available else None
    gpm_reason = None if gpm in (None, True) else reader.metric_reasons.get("gpm_sm_active_pct")
    cuda_driver = reader.cuda_driver_version
    if nvml_available and cuda_driver is None:
        reasons["nvml_cuda_driver_version"] = reader.device_reasons.get("cuda_driver_version", "NVML did not say")
    capabilities = tuple(
        GpuCapability(g.index, reader.compute_capabilities.get(g.index),
                      capability_allows(reader.compute_capabilities.get(g.index)),
                      None if g.index in reader.compute_capabilities
                      else reader.device_reasons.get("compute_capability", "NVML did not say"))
        for g in gpus
    )
    reader.close()
    if not nvml_available:
        for name in ("nvml_driver", "nvml_cuda_driver_version"):
            reasons[name] = reason or "NVML is not available"
    facts: dict[str, Any] = {}
    if with_tensorflow:
        facts = _tensorflow_facts(reasons)
    else:
        reasons["tensorflow_version"] = "not checked (TensorFlow was not imported)"
    facts.update(_framework_facts(reasons) if deep else {})
    if not deep:
        for name in ("jax_devices", "torch_devices"):
            reasons[name] = NOT_DEEP
    env = Environment(
        pipediag_version=__version__,
        python_version=platform.python_version(),
        platform=f"{platform.system()} {platform.release()} {platform.machine()}",
        cpu_logical=psutil.cpu_count(logical=True) or 1,
        cpu_physical=psutil.cpu_count(logical=False),
        memory_total_bytes=psutil.virtual_memory().total,
        nvml_driver=driver,
        gpus=tuple(gpus),
        gpu_unavailable_reason=reason,
        gpm_supported=gpm,
        gpm_reason=gpm_reason,
        nvml_cuda_driver_version=cuda_driver,
        gpu_capabilities=capabilities,
        tf_xla_flags=os.environ.get("TF_XLA_FLAGS"),
        tf_force_gpu_allow_growth=os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH"),
        xla_python_client_preallocate=os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"),
        xla_python_client_mem_fraction=os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION"),
        container=container if container is not None else read_limits(),
        reasons=reasons,
        **facts,
    )
    return with_warnings(env)


def _tensorflow_facts(reasons: dict[str, str]) -> dict[str, Any]:
    from pipediag.backends import tf as tfb

    physical = tfb.tf.config.list_physical_devices()
    tf_gpus = [d for d in physical if d.device_type == "GPU"]
    build = tfb.build_info()
    cuda = bool(build.get("is_cuda_build", tfb.is_cuda_build()))
    facts: dict[str, Any] = {
        "tensorflow_version": tfb.version(),
        "tensorflow_cuda_build": cuda,
        "tensorflow_devices": tuple(f"{d.device_type}:{d.name.rsplit(':', 1)[-1]}" for d in physical),
        "tensorflow_gpu_memory_growth": (tuple(bool(tfb.tf.config.experimental.get_memory_growth(g)) for g in tf_gpus)
                                         if tf_gpus else None),
        "tensorflow_cuda_version": build.get("cuda_version"),
        "tensorflow_cudnn_version": build.get("cudnn_version"),
        "tensorflow_cuda_capabilities": tuple(build.get("cuda_compute_capabilities") or ()),
        "tensorflow_xla_jit": tfb.xla_jit(),
    }
    if not cuda:
        for name in ("tensorflow_cuda_version", "tensorflow_cudnn_version"):
            reasons[name] = "a CPU-only build of TensorFlow"
    if not tf_gpus:
        reasons["tensorflow_gpu_memory_growth"] = "TensorFlow sees no GPU"
    return facts


def _framework_facts(reasons: dict[str, str]) -> dict[str, Any]:
    """JAX's and PyTorch's versions and devices, where they are installed."""
    facts: dict[str, Any] = {}
    try:
        import jax
    except ImportError as error:
        reasons["jax_devices"] = f"JAX is not installed ({error})"
    else:
        facts["jax_version"] = jax.__version__
        try:
            facts["jax_devices"] = tuple(f"{d.platform}:{d.id} {getattr(d, 'device_kind', '')}".strip()
                                         for d in jax.devices())
        except RuntimeError as error:  # a backend that fails to start (e.g. a broken CUDA plugin)
            reasons["jax_devices"] = f"jax.devices() failed: {error}"
    try:
        import torch
    except ImportError as error:
        reasons["torch_devices"] = f"PyTorch is not installed ({error})"
    else:
        facts["torch_version"] = torch.__version__
        facts["torch_cuda_version"] = torch.version.cuda
        if torch.version.cuda is None:
            reasons["torch_cuda_version"] = "a CPU-only build of PyTorch"
        cuda = [f"cuda:{i} {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())] \
            if torch.cuda.is_available() else []
        facts["torch_devices"] = ("cpu", *cuda)
    return facts




_with_warnings = with_warnings  # the name older callers use
