"""The CPU numbers the fixes quote: the cores that would feed the step at its free rate, and how busy the cores were."""

from __future__ import annotations

from pipediag.analysis.modes import ModeSummary
from pipediag.records.container import cores_text


def busy_text(cpu) -> str:
    if cpu.usable_cores < cpu.cores:  # a container's limit: this process against what it may use
        return f"this process {cpu.process_pct / 100:.1f} of the {cores_text(cpu.usable_cores)} it may use"
    return f"{cpu.busy_cores:.1f} of {cpu.cores} busy"


def cores_needed(modes: dict[str, ModeSummary | None]) -> float | None:
    """The cores that would feed the step at its free rate: the step's own (synthetic mode's
    process CPU) plus the pipeline's CPU seconds per batch (input_only mode: CPU over rate, which a
    quota delays but does not change) times the free rate. None when a number is missing."""
    synthetic, alone = modes.get("synthetic"), modes.get("input_only")
    if synthetic is None or alone is None or not synthetic.batches_per_sec or not alone.batches_per_sec:
        return None
    if synthetic.process_cpu_pct is None or alone.process_cpu_pct is None:
        return None
    per_batch = alone.process_cpu_pct / 100.0 / alone.batches_per_sec
    return synthetic.process_cpu_pct / 100.0 + per_batch * synthetic.batches_per_sec
