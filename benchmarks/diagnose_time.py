"""How long `pipediag diagnose --demo` takes, end to end, anatomy and ablation included.

Runs the real command N times as subprocesses (TensorFlow import included, as a user waits for
it) and writes one Markdown table with the date and machine to benchmarks/results/:

    python benchmarks/diagnose_time.py --runs 5 --lock /tmp/pipediag-cpu.lock

`--lock` takes that file's lock around each run only (other work on a shared machine waits
between runs, not during them). Each row also gives the diagnosis's own time and where it went
(the four modes' windows with warm-up, the anatomy, the ablation's alone runs), the stage named
slow, and each fix's own measured speedup, read from the run's JSON. The goal (issue 4): median
wall time at most 60 s on the 2-core development machine, aiming for 30 s.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.contextmanager
def locked(path: str | None):
    if path is None:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def one_run(extra: list[str], lock: str | None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        cmd = [sys.executable, "-m", "pipediag", "diagnose", "--demo", "--quiet", "--json", out, *extra]
        with locked(lock):
            load = os.getloadavg()[0]
            start = time.monotonic()
            done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            wall = time.monotonic() - start
        if done.returncode != 0:
            raise SystemExit(f"diagnose failed ({done.returncode}):\n{done.stderr[-2000:]}")
        with open(out) as f:
            d = json.load(f)
    modes = {}
    for name, m in d["modes"].items():
        if m is not None and m.get("run"):
            r = m["run"]
            modes[name] = (r["end_ns"] - r["start_ns"] + r["warmup_ns"]) / 1e9
    ablation = (d.get("tuning") or {}).get("ablation") or {}
    alone = [v for v in ablation.get("variants", []) if v["role"] in ("alone", "all_but")]
    return {
        "wall_s": wall,
        "elapsed_s": d["elapsed_s"],
        "load_1min": load,
        "modes_s": sum(modes.values()),
        "anatomy_s": (d.get("anatomy") or {}).get("seconds"),
        "alone_runs": len(alone),
        "bottleneck_stage": (d.get("anatomy") or {}).get("bottleneck_stage"),
        "waterfall": [(r["label"], r["batches_per_sec"]) for r in (d.get("anatomy") or {}).get("waterfall", [])],
        "fixes": [(f["kind"], f["measured_speedup"]) for f in d["fixes"]],
        "effects": [(e["kind"], e["speedup"], e["effect"]) for e in ablation.get("effects", [])],
        "together": (ablation.get("together") or {}).get("speedup"),
        "pipeline": d["modes"]["pipeline"]["batches_per_sec"] if d["modes"].get("pipeline") else None,
    }


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} logical CPUs ({cpu}), {mem:.0f} GiB RAM, {platform.system()} {platform.release()}"


def fmt(value, spec="{:.1f}") -> str:
    return "—" if value is None else spec.format(value)


def report(runs: list[dict], extra: list[str]) -> str:
    walls = [r["wall_s"] for r in runs]
    elapsed = [r["elapsed_s"] for r in runs]
    import tensorflow as tf  # noqa: PLC0415 - only for the version line

    lines = [
        f"# `pipediag diagnose --demo{' ' + ' '.join(extra) if extra else ''}`: time to a diagnosis",
        "",
        f"- date: {dt.datetime.now().isoformat(timespec='minutes')}",
        f"- machine: {machine()}; no GPU",
        f"- TensorFlow {tf.__version__}, Python {platform.python_version()}",
        f"- runs: {len(runs)}, one after another, each a fresh `python -m pipediag diagnose --demo --quiet --json F"
        f"{' ' + ' '.join(extra) if extra else ''}` (TensorFlow import included); made with "
        f"`python benchmarks/diagnose_time.py{' -- ' + ' '.join(extra) if extra else ''}`",
        f"- **median wall time {statistics.median(walls):.1f} s** (min {min(walls):.1f}, max {max(walls):.1f}); "
        f"median diagnosis time (pipediag's own `elapsed_s`: without Python start-up and the TensorFlow import) "
        f"{statistics.median(elapsed):.1f} s. Goal: at most 60 s, aim 30 s.",
        "",
        "| run | wall s | diagnosis s | 4 modes s | anatomy s | alone runs | load (1 min) | slow stage | "
        "each fix's own speedup | all together | pipeline b/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        fixes = ", ".join(f"{k} ×{s:.2f}" if s is not None else f"{k} (not measured)" for k, s in r["fixes"]) or "none"
        lines.append(
            f"| {i} | {r['wall_s']:.1f} | {r['elapsed_s']:.1f} | {r['modes_s']:.1f} | {fmt(r['anatomy_s'])} | "
            f"{r['alone_runs']} | {r['load_1min']:.2f} | {r['bottleneck_stage'] or '—'} | {fixes} | "
            f"{fmt(r['together'], '×{:.2f}')} | {fmt(r['pipeline'])} |"
        )
    lines += ["", "Waterfall of the last run (batches/s of the final pipeline):", ""]
    lines += [f"- {label}: {fmt(rate)}" for label, rate in runs[-1]["waterfall"]]
    lines += ["", "Ablation of the last run (each change alone; training throughput over the control run):", ""]
    lines += [f"- {kind}: {fmt(s, '×{:.2f}')} ({effect})" for kind, s, effect in runs[-1]["effects"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--lock", help="take this file's lock around each run (e.g. /tmp/pipediag-cpu.lock)")
    p.add_argument("--out", help="result file (default: benchmarks/results/diagnose_time_DATE.md)")
    p.add_argument("extra", nargs="*", help="more diagnose options, after --, e.g. -- --thorough")
    args = p.parse_args()
    runs = []
    for i in range(args.runs):
        runs.append(one_run(args.extra, args.lock))
        print(f"run {i + 1}: {runs[-1]['wall_s']:.1f} s wall, {runs[-1]['elapsed_s']:.1f} s diagnosis", flush=True)
    text = report(runs, args.extra)
    suffix = "_thorough" if "--thorough" in args.extra else ""
    out = args.out or os.path.join(ROOT, "benchmarks", "results", f"diagnose_time{suffix}_{dt.date.today()}.md")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    print(text)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
