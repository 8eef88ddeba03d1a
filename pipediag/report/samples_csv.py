"""Every CPU/GPU sample of a diagnosis as CSV, one row per sample, for the user's own analysis
(capacity planning, plots), in the spirit of `nvidia-smi dmon` logs.

Each row says which mode was running and in which phase (`warmup` or `timed`; `between` for the
setup, tuning and the gaps between modes, with an empty mode). A value that could not be read is
an empty cell, never 0. GPU columns exist for each GPU NVML reported; none without a GPU.
"""

from __future__ import annotations

import csv
import io

from pipediag.results.diagnose import Diagnosis

BASE_COLUMNS = ("time_s", "time_ns", "mode", "phase", "cpu_pct", "process_cpu_pct", "iowait_pct", "rss_bytes",
                "host_available_bytes", "host_total_bytes")
GPU_FIELDS = ("util_pct", "memory_used_bytes", "memory_total_bytes", "power_w", "sm_clock_mhz")


def _windows(d: Diagnosis) -> list[tuple[int, int, str, str]]:
    out = []
    for name, run in d.runs.items():
        out.append((run.start_ns - run.warmup_ns, run.start_ns, name, "warmup"))
        out.append((run.start_ns, run.end_ns, name, "timed"))
    return out


def _label(time_ns: int, windows) -> tuple[str, str]:
    # Timed windows are closed at both ends (as `SampleLog.between` counts them); they win a tie.
    for lo, hi, name, phase in windows:
        if phase == "timed" and lo <= time_ns <= hi:
            return name, phase
    for lo, hi, name, phase in windows:
        if phase == "warmup" and lo <= time_ns < hi:
            return name, phase
    return "", "between"


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def sample_table(d: Diagnosis) -> tuple[list[str], list[list[str]]]:
    samples = d.samples.samples
    cores = max((len(s.cpu.per_core_pct) for s in samples), default=0)
    gpus = sorted({g.index for g in d.samples.gpu_devices} | {g.index for s in samples for g in s.gpus})
    header = list(BASE_COLUMNS) + [f"cpu{k}_pct" for k in range(cores)]
    header += [f"gpu{i}_{f}" for i in gpus for f in GPU_FIELDS]
    windows = _windows(d)
    t0 = samples[0].time_ns if samples else 0
    rows = []
    for s in samples:
        mode, phase = _label(s.time_ns, windows)
        c = s.cpu
        row = [f"{(s.time_ns - t0) / 1e9:.3f}", str(s.time_ns), mode, phase, _cell(c.total_pct), _cell(c.process_pct),
               _cell(c.iowait_pct), _cell(c.rss_bytes), _cell(c.available_bytes), _cell(c.total_bytes)]
        row += [_cell(c.per_core_pct[k]) if k < len(c.per_core_pct) else "" for k in range(cores)]
        by_index = {g.index: g for g in s.gpus}
        for i in gpus:
            g = by_index.get(i)
            row += [""] * len(GPU_FIELDS) if g is None else [_cell(getattr(g, f)) for f in GPU_FIELDS]
        rows.append(row)
    return header, rows


def format_samples_csv(d: Diagnosis) -> str:
    header, rows = sample_table(d)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()
