"""The `pipediag env` view of an Environment: one line per fact, a None shown with its reason."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from pipediag.records.container import ContainerLimits, cores_text
from pipediag.records.environment import Environment, driver_against_build, memory_growth_text


def _gib(value: int) -> str:
    return f"{value / 2**30:.1f} GiB"


def _why(env: Environment, name: str, default: str = "unknown") -> str:
    return env.reasons.get(name, default)


def limits_rows(c: ContainerLimits) -> list[tuple[str, str]]:
    """The container's effective limits as (label, text) rows, shared by every report."""
    if c.cpu_source == "quota":
        how = f"CPU quota {c.quota_us} µs per {c.period_us} µs (cgroup {c.cgroup})"
    elif c.cpu_source == "cpuset":
        how = f"cpuset of {c.cpuset_cores} (cgroup {c.cgroup})"
    elif c.cpu_source == "affinity":
        how = f"CPU affinity of {c.affinity_cores}"
    else:
        how = c.quota_reason or "no limit"
    if c.cpu_limited:
        cpu = f"{cores_text(c.effective_cores)}: {how}, of the host's {c.host_cores}"
    else:
        cpu = f"the host's {c.host_cores} cores: {how}"
    if c.quota_cores is not None and c.cpu_source != "quota":
        cpu += f"; CPU quota {c.quota_cores:g} cores"
    if c.memory_limit_bytes:
        host = f" of the host's {c.host_memory_bytes / 2**30:.1f} GiB" if c.host_memory_bytes else ""
        memory = f"{c.memory_limit_bytes / 2**30:.2f} GiB (cgroup {c.cgroup}){host}"
    else:
        memory = c.memory_reason or "none"
    return [("CPU limit", cpu), ("RAM limit", memory)]


def render_environment(env: Environment) -> RenderableType:
    table = Table(show_header=False, title="pipediag env", title_justify="left")
    table.add_column(style="dim")
    table.add_column()
    table.add_row("pipediag", env.pipediag_version)
    table.add_row("python", f"{env.python_version} on {env.platform}")
    physical = f" ({env.cpu_physical} physical)" if env.cpu_physical else ""
    table.add_row("CPU cores", f"{env.cpu_logical}{physical}")
    table.add_row("memory", _gib(env.memory_total_bytes))
    _container_rows(table, env)
    _tensorflow_rows(table, env)
    _gpu_rows(table, env)
    growth = memory_growth_text(env)
    if growth:
        table.add_row("GPU memory", growth)
    _framework_rows(table, env)
    parts: list[RenderableType] = [table]
    for warning in env.warnings:
        parts.append(Text(f"! {warning}", style="yellow"))
    return Group(*parts)


def _container_rows(table: Table, env: Environment) -> None:
    if env.container is None:
        return
    for label, value in limits_rows(env.container):
        table.add_row(label, value)


def _tensorflow_rows(table: Table, env: Environment) -> None:
    if not env.tensorflow_version:
        table.add_row("tensorflow", _why(env, "tensorflow_version", "not checked"))
        return
    if env.tensorflow_cuda_build:
        built = ", ".join(f"{k} {v}" for k, v in (("CUDA", env.tensorflow_cuda_version),
                                                  ("cuDNN", env.tensorflow_cudnn_version)) if v)
        build = f"CUDA build: {built}" if built else "CUDA build"
    else:
        build = "CPU-only build"
    table.add_row("tensorflow", f"{env.tensorflow_version} ({build})")
    if env.tensorflow_cuda_capabilities:
        table.add_row("TF kernels for", ", ".join(env.tensorflow_cuda_capabilities))
    table.add_row("TF devices", ", ".join(env.tensorflow_devices) or "none")
    if env.tensorflow_gpu_memory_growth is not None:
        table.add_row("TF memory growth", ", ".join(str(g) for g in env.tensorflow_gpu_memory_growth)
                      + (f" (TF_FORCE_GPU_ALLOW_GROWTH={env.tf_force_gpu_allow_growth})"
                         if env.tf_force_gpu_allow_growth is not None else ""))
    if env.tensorflow_xla_jit is not None:
        flags = f"; TF_XLA_FLAGS={env.tf_xla_flags}" if env.tf_xla_flags else "; TF_XLA_FLAGS unset"
        table.add_row("XLA", f"tf.config.optimizer.get_jit(): {env.tensorflow_xla_jit}{flags} "
                      "(Keras models compile with jit_compile='auto')")


def _gpu_rows(table: Table, env: Environment) -> None:
    if not env.gpus:
        table.add_row("GPUs", f"none ({env.gpu_unavailable_reason})")
        return
    table.add_row("NVML driver", env.nvml_driver or "unknown")
    table.add_row("driver's CUDA", env.nvml_cuda_driver_version or _why(env, "nvml_cuda_driver_version"))
    if env.tensorflow_cuda_build:
        table.add_row("driver vs build", driver_against_build(env.nvml_cuda_driver_version,
                                                              env.tensorflow_cuda_version)[1])
    capabilities = {c.index: c for c in env.gpu_capabilities}
    for g in env.gpus:
        memory = f", {g.memory_total_bytes / 2**30:.0f} GiB" if g.memory_total_bytes else ""
        table.add_row(f"GPU {g.index}", f"{g.name}{memory}")
        c = capabilities.get(g.index)
        if c is not None:
            text = (f"{c.compute_capability}: {', '.join(c.allows)}" if c.compute_capability
                    else f"unknown ({c.reason})")
            table.add_row("  compute capability", text)
    if env.gpm_supported is not None:
        table.add_row("GPM", "yes: SM, tensor-core and DRAM activity" if env.gpm_supported
                      else f"no ({env.gpm_reason or 'not supported'})")


def _framework_rows(table: Table, env: Environment) -> None:
    if env.jax_version:
        devices = ", ".join(env.jax_devices) if env.jax_devices is not None else _why(env, "jax_devices")
        table.add_row("jax", f"{env.jax_version}: {devices}")
    elif "jax_devices" in env.reasons:
        table.add_row("jax", env.reasons["jax_devices"])
    if env.torch_version:
        cuda = f"CUDA {env.torch_cuda_version}" if env.torch_cuda_version else "CPU-only build"
        devices = ", ".join(env.torch_devices) if env.torch_devices is not None else _why(env, "torch_devices")
        table.add_row("torch", f"{env.torch_version} ({cuda}): {devices}")
    elif "torch_devices" in env.reasons:
        table.add_row("torch", env.reasons["torch_devices"])
