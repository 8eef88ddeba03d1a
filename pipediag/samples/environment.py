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
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import psutil

from pipediag._version import __version__
from pipediag.records.container import ContainerLimits
from pipediag.samples.container import read_limits
from pipediag.samples.gpu import GpuReader
from pipediag.records.readings import GpuDevice


TF_SEES_NO_GPU = "TensorFlow sees none"  # the warning a JAX or PyTorch step makes moot
NOT_DEEP = "not checked: run 'pipediag env' (importing JAX or PyTorch is kept out of a diagnosis)"


@dataclass(frozen=True)
class GpuCapability:
    """One GPU's compute capability (NVML) and what it allows."""

    index: int
    compute_capability: str | None  # "9.0"; None: NVML did not say
    allows: tuple[str, ...]  # e.g. "fp16 tensor cores (mixed_float16)", "TF32", "bf16", "fp8"
    reason: str | None = None  # why compute_capability is None


@dataclass(frozen=True)
class Environment:
    pipediag_version: str
    python_version: str
    platform: str
    cpu_logical: int
    cpu_physical: int | None
    memory_total_bytes: int
    tensorflow_version: str | None = None
    tensorflow_cuda_build: bool | None = None
    tensorflow_devices: tuple[str, ...] = ()
    tensorflow_gpu_memory_growth: tuple[bool, ...] | None = None
    nvml_driver: str | None = None
    gpus: tuple[GpuDevice, ...] = ()
    gpu_unavailable_reason: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    gpm_supported: bool | None = None  # GPM (Hopper+ SM/tensor/DRAM activity); None without a GPU
    gpm_reason: str | None = None  # why not, when not
    # What TensorFlow was built with (tf.sysconfig.get_build_info()); None on a CPU build.
    tensorflow_cuda_version: str | None = None
    tensorflow_cudnn_version: str | None = None
    tensorflow_cuda_capabilities: tuple[str, ...] = ()  # the kernels it carries: sm_80, compute_90, ...
    tensorflow_xla_jit: str | None = None  # tf.config.optimizer.get_jit(): "off", "autoclustering", "on"
    tf_xla_flags: str | None = None  # the TF_XLA_FLAGS environment variable, unset: None
    tf_force_gpu_allow_growth: str | None = None  # the TF_FORCE_GPU_ALLOW_GROWTH environment variable
    xla_python_client_preallocate: str | None = None  # JAX's XLA_PYTHON_CLIENT_PREALLOCATE
    xla_python_client_mem_fraction: str | None = None  # JAX's XLA_PYTHON_CLIENT_MEM_FRACTION
    nvml_cuda_driver_version: str | None = None  # the newest CUDA the driver supports, "12.8"
    gpu_capabilities: tuple[GpuCapability, ...] = ()
    jax_version: str | None = None
    jax_devices: tuple[str, ...] | None = None  # "gpu:0 NVIDIA H200", "cpu:0"
    torch_version: str | None = None
    torch_cuda_version: str | None = None  # the CUDA PyTorch was built with
    torch_devices: tuple[str, ...] | None = None
    reasons: dict[str, str] = field(default_factory=dict)  # a None fact above -> why it is None
    container: ContainerLimits | None = None  # this process's effective CPU and memory limits (cgroups)

    @property
    def effective_cores(self) -> float:
        """The cores this process may use: the container's limit, else the host's logical cores."""
        return self.container.effective_cores if self.container is not None else float(self.cpu_logical)

    @property
    def tf_gpu_without_memory_growth(self) -> bool:
        growth = self.tensorflow_gpu_memory_growth
        forced = (self.tf_force_gpu_allow_growth or os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "")).lower() == "true"
        return bool(growth) and not all(growth) and not forced

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["container"] = None if self.container is None else self.container.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Environment:
        d = dict(d)
        d["tensorflow_devices"] = tuple(d.get("tensorflow_devices", ()))
        growth = d.get("tensorflow_gpu_memory_growth")
        d["tensorflow_gpu_memory_growth"] = None if growth is None else tuple(growth)
        d["gpus"] = tuple(GpuDevice(**g) for g in d.get("gpus", ()))
        d["warnings"] = tuple(d.get("warnings", ()))
        if d.get("container") is not None:
            d["container"] = ContainerLimits.from_dict(d["container"])
        d["tensorflow_cuda_capabilities"] = tuple(d.get("tensorflow_cuda_capabilities", ()))
        d["gpu_capabilities"] = tuple(GpuCapability(**{**g, "allows": tuple(g["allows"])})
                                      for g in d.get("gpu_capabilities", ()))
        for name in ("jax_devices", "torch_devices"):
            d[name] = None if d.get(name) is None else tuple(d[name])
        d["reasons"] = dict(d.get("reasons", {}))
        return cls(**d)

    def for_step(self, framework: str | None) -> Environment:
        """The environment as a step of `framework` sees it: a JAX or PyTorch step runs on the GPU
        itself, and TensorFlow only feeds its input on the CPU, as intended, so the warning that
        TensorFlow sees no GPU is dropped there."""
        if framework not in ("jax", "torch"):
            return self
        return replace(self, warnings=tuple(w for w in self.warnings if TF_SEES_NO_GPU not in w))

    def differences(self, other: Environment) -> list[str]:
        """What differs in ways that change throughput (for comparing saved runs)."""
        out = []
        for name in ("cpu_logical", "memory_total_bytes", "tensorflow_version", "tensorflow_cuda_build"):
            a, b = getattr(self, name), getattr(other, name)
            if a != b:
                out.append(f"{name}: {a} vs {b}")
        if self.effective_cores != other.effective_cores:
            out.append(f"effective cores (container limit): {self.effective_cores:g} vs {other.effective_cores:g}")
        for name in ("nvml_driver", "jax_version", "torch_version"):  # only where both runs read them
            a, b = getattr(self, name), getattr(other, name)
            if a != b and a is not None and b is not None:
                out.append(f"{name}: {a} vs {b}")
        if [g.name for g in self.gpus] != [g.name for g in other.gpus]:
            out.append(f"GPUs: {[g.name for g in self.gpus]} vs {[g.name for g in other.gpus]}")
        return out


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


# -- what the facts mean -------------------------------------------------------------------------
def capability_allows(capability: str | None) -> tuple[str, ...]:
    """What a compute capability allows for training (NVIDIA's architecture generations):
    tensor cores for fp16 from Volta (7.0), TF32 and bf16 from Ampere (8.0), fp8 from Ada/Hopper (8.9)."""
    if capability is None:
        return ()
    major, minor = (int(p) for p in capability.split(".")[:2])
    cc = major * 10 + minor
    allows = []
    if cc >= 70:
        allows.append("fp16 tensor cores (mixed_float16)")
    if cc >= 80:
        allows += ["TF32 matmuls (TensorFlow's default)", "bf16 (mixed_bfloat16)"]
    if cc >= 89:
        allows.append("fp8")
    if not allows:
        allows.append("no tensor cores: mixed precision saves memory but gains little speed")
    return tuple(allows)


def _version(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        parts = [int(p) for p in str(text).split(".")[:2]]
    except ValueError:
        return None
    return (parts[0], parts[1] if len(parts) > 1 else 0)


def driver_against_build(driver_cuda: str | None, build_cuda: str | None) -> tuple[bool | None, str]:
    """Can a driver supporting CUDA `driver_cuda` run a build made with `build_cuda`?

    Since CUDA 11, a build runs on any driver of the same major CUDA version (minor version
    compatibility; only PTX JIT compilation for a newer minor is lost) and on any newer one; a
    driver of an older major version cannot load it. (ok or None when unknown, the text.)"""
    d, b = _version(driver_cuda), _version(build_cuda)
    if d is None or b is None:
        missing = "the driver's CUDA version" if d is None else "the build's CUDA version"
        return None, f"unknown ({missing} is not known)"
    if d >= b:
        return True, f"the driver supports CUDA {driver_cuda}, the build needs {build_cuda}: ok"
    if d[0] == b[0]:
        return True, (f"the driver supports CUDA {driver_cuda}, older than the build's {build_cuda}: it runs through "
                      "CUDA minor version compatibility (no PTX JIT for newer GPUs)")
    return False, f"the driver supports CUDA {driver_cuda} only, the build needs {build_cuda}"


def memory_growth_text(env: Environment) -> str | None:
    """What the memory settings mean for sharing the GPU with another process."""
    parts = []
    growth = env.tensorflow_gpu_memory_growth
    forced = (env.tf_force_gpu_allow_growth or "").lower() == "true"
    if growth is not None:
        if all(growth) or forced:
            parts.append("TensorFlow allocates GPU memory as it needs it (memory growth on): the GPU can be shared")
        else:
            parts.append("TensorFlow takes nearly all GPU memory at its first op (memory growth off): another "
                         "process on this GPU will run out of memory")
    if env.jax_devices and any(d.startswith("gpu") for d in env.jax_devices):
        if (env.xla_python_client_preallocate or "").lower() == "false":
            parts.append("JAX allocates as it needs (XLA_PYTHON_CLIENT_PREALLOCATE=false)")
        else:
            fraction = env.xla_python_client_mem_fraction or "0.75"
            parts.append(f"JAX preallocates {float(fraction):.0%} of the GPU at its first op "
                         "(XLA_PYTHON_CLIENT_MEM_FRACTION; XLA_PYTHON_CLIENT_PREALLOCATE=false to share)")
    return "; ".join(parts) or None


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
