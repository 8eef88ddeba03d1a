"""The machine a diagnosis ran on: Python, TensorFlow and its devices, NVML and its GPUs, CPUs, RAM,
plus the warnings a user needs before trusting the numbers (`pipediag env` prints it)."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import psutil

from pipediag._version import __version__
from pipediag.samples.container import ContainerLimits, read_limits
from pipediag.samples.gpu import GpuReader
from pipediag.samples.readings import GpuDevice


TF_SEES_NO_GPU = "TensorFlow sees none"  # the warning a JAX or PyTorch step makes moot

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
    container: ContainerLimits | None = None  # this process's effective CPU and memory limits (cgroups)

    @property
    def effective_cores(self) -> float:
        """The cores this process may use: the container's limit, else the host's logical cores."""
        return self.container.effective_cores if self.container is not None else float(self.cpu_logical)

    @property
    def tf_gpu_without_memory_growth(self) -> bool:
        growth = self.tensorflow_gpu_memory_growth
        forced = os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "").lower() == "true"
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
        if [g.name for g in self.gpus] != [g.name for g in other.gpus]:
            out.append(f"GPUs: {[g.name for g in self.gpus]} vs {[g.name for g in other.gpus]}")
        return out


def collect(*, with_tensorflow: bool = True, nvml_lib: Any | None = None,
            container: ContainerLimits | None = None) -> Environment:
    """`container`: the limits already read (a diagnosis reads them once); default: read now."""
    reader = GpuReader(nvml_lib).open()
    gpus, driver, reason = reader.devices, reader.driver_version, reader.unavailable_reason
    gpm = reader.gpm_available if reader.available else None
    gpm_reason = None if gpm in (None, True) else reader.metric_reasons.get("gpm_sm_active_pct")
    reader.close()
    tf_version = cuda = growth = None
    devices: tuple[str, ...] = ()
    if with_tensorflow:
        from pipediag.backends import tf as tfb

        tf_version = tfb.version()
        cuda = tfb.is_cuda_build()
        physical = tfb.tf.config.list_physical_devices()
        devices = tuple(f"{d.device_type}:{d.name.rsplit(':', 1)[-1]}" for d in physical)
        tf_gpus = [d for d in physical if d.device_type == "GPU"]
        growth = tuple(bool(tfb.tf.config.experimental.get_memory_growth(g)) for g in tf_gpus) if tf_gpus else None
    env = Environment(
        pipediag_version=__version__,
        python_version=platform.python_version(),
        platform=f"{platform.system()} {platform.release()} {platform.machine()}",
        cpu_logical=psutil.cpu_count(logical=True) or 1,
        cpu_physical=psutil.cpu_count(logical=False),
        memory_total_bytes=psutil.virtual_memory().total,
        tensorflow_version=tf_version,
        tensorflow_cuda_build=cuda,
        tensorflow_devices=devices,
        tensorflow_gpu_memory_growth=growth,
        nvml_driver=driver,
        gpus=tuple(gpus),
        gpu_unavailable_reason=reason,
        gpm_supported=gpm,
        gpm_reason=gpm_reason,
        container=container if container is not None else read_limits(),
    )
    return _with_warnings(env)


def _with_warnings(env: Environment) -> Environment:
    warnings = []
    tf_gpus = [d for d in env.tensorflow_devices if d.startswith("GPU")]
    if env.gpus and env.tensorflow_version and not tf_gpus:
        build = "a CPU-only build" if env.tensorflow_cuda_build is False else "a CUDA build that found no usable GPU"
        warnings.append(
            f"NVML sees {len(env.gpus)} GPU(s) but {TF_SEES_NO_GPU} ({build}): TensorFlow steps run on the CPU. "
            "Install 'tensorflow[and-cuda]', or feed a JAX/PyTorch step with --step."
        )
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
