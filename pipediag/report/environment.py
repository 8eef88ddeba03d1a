"""The `pipediag env` view of an Environment."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from pipediag.environment import Environment


def render_environment(env: Environment) -> RenderableType:
    table = Table(show_header=False, title="pipediag env", title_justify="left")
    table.add_column(style="dim")
    table.add_column()
    table.add_row("pipediag", env.pipediag_version)
    table.add_row("python", f"{env.python_version} on {env.platform}")
    physical = f" ({env.cpu_physical} physical)" if env.cpu_physical else ""
    table.add_row("CPU cores", f"{env.cpu_logical}{physical}")
    table.add_row("memory", f"{env.memory_total_bytes / 2**30:.1f} GiB")
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
