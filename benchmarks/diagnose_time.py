"""How long `pipediag diagnose` takes to a verdict, over the scenarios, at the defaults.

Runs the real command once per scenario of scenarios/ and scenarios/real/ (as
benchmarks/accuracy.py does, with each scenario's own step and DIAGNOSE_ARGS, but no
--max-seconds: the defaults a user gets), as subprocesses (Python start-up and the TensorFlow
import included, as a user waits for them), and writes one Markdown table with the date and
machine to benchmarks/results/:

    python benchmarks/diagnose_time.py --lock /tmp/cpu.lock              # scenarios/ and scenarios/real/
    python benchmarks/diagnose_time.py --only compute_bound,real/tf_csv  # some of them
    python benchmarks/diagnose_time.py --lock /tmp/cpu.lock -- --quick   # more diagnose options after --

`--lock` takes that file's lock around each scenario only: reading it (an import of its framework)
and diagnosing it; other work on a shared machine waits between scenarios, not during them. Each
row gives the wall time, the diagnosis's own time (`elapsed_s`) and where it went (the JSON's
`phases`, schema 2), the verdict, and whether the tuned mode ran or was skipped; the totals give
the median and longest wall time against issue 26's goal (median at most 15 s, longest at most
40 s; --quick: median at most 8 s) and the median of each phase. A scenario's data is made on
its first use (in $TMPDIR/pipediag-scenarios/): run the accuracy benchmark or this one once
before timing on a fresh machine.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from accuracy import (  # noqa: E402 (the scenario helpers the accuracy benchmark defines)
    ROOT,
    SETS,
    child_env,
    diagnose_command,
    scenario_name,
    scenario_paths,
)

sys.path.insert(0, ROOT)  # this tree's pipediag, not an installed one
from pipediag.records.phases import PHASE_LABELS  # noqa: E402

GOALS = {"median_s": 15.0, "longest_s": 40.0, "quick_median_s": 8.0}


def _describe(path: str) -> dict:
    """The scenario's step and options, read in a child (importing it imports its framework)."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "accuracy.py"), "--describe", path],
                          capture_output=True, text=True, env=child_env(), cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError("loading the scenario failed: " + done.stderr[-1500:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def at_defaults(cmd: list[str]) -> list[str]:
    """accuracy's diagnose command without its --max-seconds: the default a user gets."""
    i = cmd.index("--max-seconds")
    return cmd[:i] + cmd[i + 2:]


def one_run(path: str, extra: list[str], lock: str | None, keep: str | None = None) -> dict:
    row = {"scenario": scenario_name(path)}
    with tempfile.TemporaryDirectory() as tmp, _flock(lock) if lock else contextlib.nullcontext():
        # Under the lock too: reading the scenario imports its framework (seconds of CPU), which
        # would otherwise land on whatever else holds the lock.
        try:
            info = _describe(path)
        except RuntimeError as error:
            return {**row, "error": str(error)}
        out = os.path.join(tmp, "run.json")
        cmd = at_defaults(diagnose_command(os.path.relpath(path, ROOT), info, 10.0, out)) + extra
        load = os.getloadavg()[0]
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, env=child_env(info.get("env")), cwd=ROOT)
        wall = time.monotonic() - start
        if not os.path.exists(out):
            return {**row, "wall_s": wall, "error": f"exit {done.returncode}: {done.stderr[-1500:]}"}
        with open(out) as f:
            d = json.load(f)
        if keep:  # the whole report, for reading where a scenario's time went
            os.makedirs(keep, exist_ok=True)
            shutil.copy(out, os.path.join(keep, scenario_name(path).replace("/", "__") + ".json"))
    verdict = d.get("verdict") or {}
    return {
        **row, "wall_s": wall, "elapsed_s": d["elapsed_s"], "startup_s": d.get("startup_s"), "load_1min": load,
        "exit": done.returncode,
        "phases": {p["name"]: p["seconds"] for p in d.get("phases", [])},
        "verdict": f"{verdict.get('bottleneck', '—')} ({verdict.get('confidence', '—')})",
        "expected": info["expected"]["bottleneck"],
        "tuned": "ran" if (d["modes"].get("tuned") is not None) else
                 ("skipped" if any(n.startswith("tuned mode skipped") for n in d["notes"]) else "not run"),
    }


@contextlib.contextmanager
def _flock(path: str):
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    gpus = "no GPU"
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30)
        names = [line.strip() for line in done.stdout.splitlines() if line.strip()]
        gpus = ", ".join(names) if done.returncode == 0 and names else gpus
    except (OSError, subprocess.SubprocessError):
        pass
    return (f"{os.cpu_count()} logical CPUs ({cpu}), {mem:.0f} GiB RAM, {platform.system()} {platform.release()}; "
            f"{gpus}")


def totals(rows: list[dict], quick: bool) -> dict:
    timed = [r for r in rows if "elapsed_s" in r]
    walls = [r["wall_s"] for r in timed]
    starts = [r["startup_s"] for r in timed if r.get("startup_s") is not None]
    phase_medians = {}
    for name in PHASE_LABELS:
        values = [r["phases"].get(name, 0.0) for r in timed]
        if any(values):
            phase_medians[name] = statistics.median(values)
    return {
        "scenarios": len(rows), "timed": len(timed),
        "median_wall_s": statistics.median(walls) if walls else None,
        "longest_wall_s": max(walls) if walls else None,
        "longest": max(timed, key=lambda r: r["wall_s"])["scenario"] if timed else None,
        "median_elapsed_s": statistics.median(r["elapsed_s"] for r in timed) if timed else None,
        "median_startup_s": statistics.median(starts) if starts else None,
        "phase_medians_s": phase_medians,
        "goal": f"median <= {GOALS['quick_median_s']:g} s" if quick else
                f"median <= {GOALS['median_s']:g} s, longest <= {GOALS['longest_s']:g} s",
    }


def _phases_cell(phases: dict) -> str:
    top = sorted(phases.items(), key=lambda kv: kv[1], reverse=True)
    return ", ".join(f"{PHASE_LABELS.get(k, k)} {v:.1f}" for k, v in top if v >= 0.5) or "—"


def report(rows: list[dict], t: dict, extra: list[str], command: str) -> str:
    import tensorflow as tf  # noqa: PLC0415 - only for the version line

    fmt = lambda v: "—" if v is None else f"{v:.1f}"  # noqa: E731
    lines = [
        f"# `pipediag diagnose{' ' + ' '.join(extra) if extra else ''}`: time to a verdict over the scenarios",
        "",
        f"- date: {dt.datetime.now().isoformat(timespec='minutes')}",
        f"- machine: {machine()}",
        f"- TensorFlow {tf.__version__}, Python {platform.python_version()}",
        f"- made with `{command}`: each scenario once, a fresh `python -m pipediag diagnose ... --quiet --json F` "
        "at the default --max-seconds (TensorFlow import included)",
        f"- **median wall time {fmt(t['median_wall_s'])} s, longest {fmt(t['longest_wall_s'])} s** ({t['longest']}); "
        f"median diagnosis time (`elapsed_s`, without the process's start-up) {fmt(t['median_elapsed_s'])} s, "
        f"median start-up before it (`startup_s`: Python, the imports, the builder's module) "
        f"{fmt(t.get('median_startup_s'))} s, over {t['timed']} of {t['scenarios']} scenarios. "
        f"Goal (issue 26): {t['goal']}.",
        "- median seconds per phase over the scenarios (0 where a phase did not run): "
        + (", ".join(f"{PHASE_LABELS[k]} {v:.1f}" for k, v in t["phase_medians_s"].items()) or "—"),
        "",
        "| scenario | wall s | diagnosis s | verdict (expected) | tuned | where the time went (s, phases >= 0.5 s) | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "elapsed_s" not in r:
            lines.append(f"| {r['scenario']} | {fmt(r.get('wall_s'))} | — | error: {r['error'][:120]!r} | | | |")
            continue
        lines.append(f"| {r['scenario']} | {r['wall_s']:.1f} | {r['elapsed_s']:.1f} | {r['verdict']} "
                     f"({r['expected']}) | {r['tuned']} | {_phases_cell(r['phases'])} | {r['load_1min']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", default="all", choices=sorted(SETS), help="which scenarios (default: all)")
    p.add_argument("--gpu", action="store_true", help="scenarios/gpu instead of --set (on a machine with an NVIDIA GPU)")
    p.add_argument("--only", help="comma-separated scenario names, e.g. compute_bound,real/tf_csv")
    p.add_argument("--lock", help="take this file's lock around each scenario (e.g. /tmp/cpu.lock)")
    p.add_argument("--out", help="result file (default: benchmarks/results/diagnose_time[_quick]_DATE.md)")
    p.add_argument("--keep", help="a folder to keep each scenario's JSON report in")
    p.add_argument("extra", nargs="*", help="more diagnose options, after --, e.g. -- --quick")
    args = p.parse_args()
    paths = scenario_paths(gpu=args.gpu, only=args.only.split(",") if args.only else None, which=args.set)
    rows = []
    for path in paths:
        rows.append(one_run(path, args.extra, args.lock, args.keep))
        r = rows[-1]
        print(f"{r['scenario']}: {r.get('wall_s', 0):.1f} s wall, "
              + (f"{r['elapsed_s']:.1f} s diagnosis" if "elapsed_s" in r else r["error"][:200]), flush=True)
    t = totals(rows, "--quick" in args.extra)
    text = report(rows, t, args.extra, "python benchmarks/diagnose_time.py " + " ".join(sys.argv[1:]))
    suffix = "_quick" if "--quick" in args.extra else ""
    stamp = dt.datetime.now().strftime("%Y-%m-%d-%H%M")
    out = args.out or os.path.join(ROOT, "benchmarks", "results", f"diagnose_time{suffix}_{stamp}.md")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    print(text)
    print(json.dumps(t))


if __name__ == "__main__":
    main()
