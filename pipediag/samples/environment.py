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
import sys
from dataclasses import replace
from typing import Any

import psutil

from pipediag._version import __version__
from pipediag.records.container import ContainerLimits
from pipediag.samples.container import read_limits
from pipediag.samples.gpu import GpuReader
from pipediag.records.environment import (
    NOT_DEEP, TF_SEES_NO_GPU, Environment, GpuCapability, capability_allows, driver_against_build,
)


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


def with_warnings(env: Environment) -> Environment:
    """The environment with the warnings its facts call for (each ends with what to do)."""
    warnings = [w for w in (
        _tensorflow_gpus_warning(env), _jax_gpus_warning(env), _driver_warning(env), _kernels_warning(env),
    ) if w]
    if env.tf_gpu_without_memory_growth:
        warnings.append(
            "TensorFlow will reserve nearly all GPU memory (memory growth is off): NVML memory readings show the "
            "reservation, not real use. Set TF_FORCE_GPU_ALLOW_GROWTH=true or tf.config.experimental.set_memory_growth."
        )
    if env.cpu_logical < 2:
        warnings.append("only one CPU core: the input pipeline and the step share it, so every mode competes for it")
    elif env.container is not None and env.container.effective_cores < 2:
        warnings.append(f"only {env.container.effective_cores:g} CPU core(s) for this process "
                        f"({env.container.cpu_text()}): the input pipeline and the step share it, so every mode "
                        "competes for it")
    if sys.version_info < (3, 10):
        warnings.append("Python older than 3.10 is not supported")
    return replace(env, warnings=tuple(warnings))


_with_warnings = with_warnings  # the name older callers use


def _tensorflow_gpus_warning(env: Environment) -> str | None:
    """TensorFlow's GPUs against NVML's: NVML talks to the driver directly, TensorFlow through the
    CUDA libraries it loads, so a GPU NVML sees and TensorFlow does not means those libraries are
    missing or wrong (or CUDA_VISIBLE_DEVICES hides it)."""
    if not env.gpus or not env.tensorflow_version:
        return None
    tf_gpus = [d for d in env.tensorflow_devices if d.startswith("GPU")]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    hidden = f" (CUDA_VISIBLE_DEVICES={visible!r} hides some)" if visible is not None else ""
    if not tf_gpus:
        if env.tensorflow_cuda_build is False:
            return (f"NVML sees {len(env.gpus)} GPU(s) but {TF_SEES_NO_GPU} (a CPU-only build): TensorFlow steps run "
                    "on the CPU. Install 'tensorflow[and-cuda]', or feed a JAX/PyTorch step with --step.")
        needs = ", ".join(f"{k} {v}" for k, v in (("CUDA", env.tensorflow_cuda_version),
                                                  ("cuDNN", env.tensorflow_cudnn_version)) if v)
        return (f"NVML sees {len(env.gpus)} GPU(s) but {TF_SEES_NO_GPU} (a CUDA build that found no usable GPU"
                f"{hidden}): the CUDA libraries it loads are missing or do not match"
                + (f" (it was built with {needs})" if needs else "")
                + ". HINT: pip install 'tensorflow[and-cuda]' for the matching NVIDIA libraries (or fix "
                "LD_LIBRARY_PATH); TF_CPP_MIN_LOG_LEVEL=0 shows which library failed to load.")
    if len(tf_gpus) != len(env.gpus):
        return (f"TensorFlow sees {len(tf_gpus)} GPU(s), NVML {len(env.gpus)}{hidden}: "
                "HINT: check CUDA_VISIBLE_DEVICES, and that no GPU is in a state CUDA refuses (MIG, a failed GPU).")
    return None


def _jax_gpus_warning(env: Environment) -> str | None:
    if not env.gpus or env.jax_devices is None:
        return None
    if not any(d.startswith(("gpu", "cuda")) for d in env.jax_devices):
        return (f"NVML sees {len(env.gpus)} GPU(s) but JAX sees only {', '.join(env.jax_devices)}: its CUDA plugin "
                "is missing or does not match the driver. HINT: pip install 'jax[cuda12]' (or the CUDA major "
                "version your driver supports).")
    return None


def _driver_warning(env: Environment) -> str | None:
    if not env.tensorflow_cuda_build or not env.gpus:
        return None
    ok, text = driver_against_build(env.nvml_cuda_driver_version, env.tensorflow_cuda_version)
    if ok is False:
        return f"{text}: TensorFlow cannot use the GPU. HINT: upgrade the NVIDIA driver, or install a TensorFlow " \
               "built for the CUDA version the driver supports."
    return None


def _kernels_warning(env: Environment) -> str | None:
    """A GPU older than every architecture the build carries kernels for cannot run them."""
    built = sorted(int(c.split("_")[1]) for c in env.tensorflow_cuda_capabilities
                   if "_" in c and c.split("_")[1].isdigit())
    if not built:
        return None
    too_old = [g for g in env.gpu_capabilities if g.compute_capability is not None
               and int(g.compute_capability.replace(".", "")) < built[0]]
    if not too_old:
        return None
    listed = ", ".join(f"GPU {g.index} ({g.compute_capability})" for g in too_old)
    return (f"TensorFlow carries kernels for compute capability {built[0] / 10:.1f} and newer only; {listed} is older. "
            "HINT: use a TensorFlow build (or version) that supports this GPU.")
