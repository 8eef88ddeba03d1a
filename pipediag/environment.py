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
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import psutil

from pipediag._version import __version__
from pipediag.environment_warnings import TF_SEES_NO_GPU, with_warnings
from pipediag.environment_warnings import driver_against_build as driver_against_build  # report/environment.py
from pipediag.samples.container import ContainerLimits, read_limits
from pipediag.samples.gpu import GpuReader
from pipediag.samples.readings import GpuDevice

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


_with_warnings = with_warnings  # the name older callers use

