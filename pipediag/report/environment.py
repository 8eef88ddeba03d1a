"""The `pipediag env` view of an Environment."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from pipediag.environment import Environment
from pipediag.samples.container import ContainerLimits, cores_text


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
    table.add_row("memory", f"{env.memory_total_bytes / 2**30:.1f} GiB")
    if env.container is not None:
        for label, value in limits_rows(env.container):
            table.add_row(label, value)
    if env.tensorflow_version:
        build = "CUDA build" if env.tensorflow_cuda_build else "CPU-only build"
        table.add_row("tensorflow", f"{env.tensorflow_version} ({build})")
        table.add_row("TF devices", ", ".join(env.tensorflow_devices) or "none")
        if env.tensorflow_gpu_memory_growth is not None:
            table.add_row("TF memory growth", ", ".join(str(g) for g in env.tensorflow_gpu_memory_growth))
    else:
        table.add_row("tensorflow", "not checked")
    if env.gpus:
        table.add_row("NVML driver", env.nvml_driver or "unknown")
        for g in env.gpus:
            memory = f", {g.memory_total_bytes / 2**30:.0f} GiB" if g.memory_total_bytes else ""
            table.add_row(f"GPU {g.index}", f"{g.name}{memory}")
        if env.gpm_supported is not None:
            table.add_row("GPM", "yes: SM, tensor-core and DRAM activity" if env.gpm_supported
                          else f"no ({env.gpm_reason or 'not supported'})")
    else:
        table.add_row("GPUs", f"none ({env.gpu_unavailable_reason})")
    parts: list[RenderableType] = [table]
    for warning in env.warnings:
        parts.append(Text(f"! {warning}", style="yellow"))
    return Group(*parts)
