"""The machine a run saw, as recorded: OS, Python, CPUs, memory, GPUs, drivers, frameworks, with the text helpers the reports share."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pipediag.records.container import ContainerLimits
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
