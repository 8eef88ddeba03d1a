"""The warnings an environment's facts call for, each ending with what to do (driver against build, GPUs one
framework does not see, kernels, memory growth, one core)."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from pipediag.records.environment import TF_SEES_NO_GPU, driver_against_build

if TYPE_CHECKING:
    from pipediag.records.environment import Environment








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
    return replace(env, warnings=tuple(warnings))


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
