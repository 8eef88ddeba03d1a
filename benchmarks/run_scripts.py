"""`pipediag run` on unmodified public training scripts, against `pipediag diagnose` on the same
pipeline refactored into a builder, both against the plain-TensorFlow expected answer.

    python scenarios/scripts/get_scripts.py --source-root tensorflow/docs=DIR ...   # the scripts
    python benchmarks/run_scripts.py [CASE ...] [--plain] [--no-lock]

For each case of scenarios/scripts/ (issue 24, item 7), holding the CPU lock (/tmp/cpu.lock):

1. its make_data.py writes the script's data into a fresh temporary folder (where the script
   looks for it: a Keras download cache, an archive in the working directory, a tfds folder);
2. with `--plain`, the script runs as published (`python train.py`) there: exit code and seconds;
3. `python -m pipediag run --json RUN.json train.py` runs there, with the data maker's environment;
4. `python -m pipediag diagnose --json DIAG.json builder.py:make_dataset --model|--step ...`
   runs on the builder form;

then bottleneck, slow stage and fix kinds of both are judged against the builder's EXPECTED (the
judge of benchmarks/accuracy.py) and against each other. A builder whose script's own loop does
what its builder form cannot (a new iterator every epoch: the builder `repeat()`s) also has a
RUN_EXPECTED, the script's answer, which `pipediag run` is judged against; the two forms are then
not expected to agree, and the table says so. Writes
benchmarks/results/run-scripts-cpu-<date>.{json,md}. Where `pipediag run` is not there (this
branch before the `pipediag run` package lands), its column says so and nothing stands in for it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "scenarios", "scripts")
RESULTS = os.path.join(ROOT, "benchmarks", "results")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from accuracy import _tail, child_env, judge, read_diagnosis  # noqa: E402


def case_names() -> list[str]:
    return sorted(d for d in os.listdir(CASES) if os.path.isfile(os.path.join(CASES, d, "source.json")))


@contextmanager
def cpu_lock(path: str | None):
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_available() -> tuple[bool, str]:
    """Whether this pipediag has the `run` command, and what it said when asked for its help."""
    result = subprocess.run([sys.executable, "-m", "pipediag", "run", "--help"],
                            capture_output=True, text=True, env=child_env(), cwd=ROOT)
    if result.returncode == 0:
        return True, ""
    return False, "`pipediag run` is not in this pipediag (`python -m pipediag run --help` exited " \
                  f"{result.returncode}: {_tail(result.stderr or result.stdout, 2)})"


def _timed(cmd: list[str], cwd: str, env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    start = time.monotonic()
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        out = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return {"exit_code": None, "wall_s": time.monotonic() - start, "error": f"timed out after {timeout_s:.0f} s",
                "tail": _tail(out)}
    return {"exit_code": result.returncode, "wall_s": time.monotonic() - start,
            "tail": _tail(result.stderr or result.stdout)}


def _judged(outcome: dict[str, Any], json_path: str, expected: dict[str, Any]) -> dict[str, Any]:
    if not os.path.exists(json_path):
        outcome.setdefault("error", f"exited {outcome['exit_code']} without a JSON")
        return outcome
    with open(json_path) as f:
        outcome["found"] = read_diagnosis(json.load(f))
    outcome["judged"] = judge(expected, outcome["found"])
    return outcome


def describe(builder: str) -> dict[str, Any]:
    """The builder's EXPECTED and step kind, read in a child (importing it imports TensorFlow)."""
    result = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "accuracy.py"), "--describe", builder],
                            capture_output=True, text=True, env=child_env(), cwd=ROOT)
    if result.returncode != 0:
        raise RuntimeError("loading the builder failed: " + _tail(result.stderr))
    return json.loads(result.stdout.strip().splitlines()[-1])


def diagnose_cmd(builder: str, info: dict[str, Any], max_seconds: float, json_path: str) -> list[str]:
    flag = "--model" if info["step"] == "model" else "--step"
    fn = "make_model" if info["step"] == "model" else "make_step"
    return [sys.executable, "-m", "pipediag", "diagnose", f"{builder}:make_dataset", flag, f"{builder}:{fn}",
            *info["diagnose_args"], "--max-seconds", str(max_seconds), "--quiet", "--json", json_path]


def agreement(run: dict[str, Any], diag: dict[str, Any]) -> dict[str, Any] | None:
    """Do `run` and `diagnose` say the same: bottleneck, stage, and the set of fix kinds."""
    if "found" not in run or "found" not in diag:
        return None
    a, b = run["found"], diag["found"]
    kinds = (sorted({f["kind"] for f in a["fixes"]}), sorted({f["kind"] for f in b["fixes"]}))
    return {"bottleneck": a["bottleneck"] == b["bottleneck"], "stage": a["stage"] == b["stage"],
            "fix_kinds": kinds[0] == kinds[1]}


def make_data(case: str, root: str) -> dict[str, Any]:
    result = subprocess.run([sys.executable, os.path.join(CASES, case, "make_data.py"), root],
                            capture_output=True, text=True, env=child_env(), cwd=ROOT)
    if result.returncode != 0:
        raise RuntimeError("make_data.py failed: " + _tail(result.stderr))
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_case(case: str, args: argparse.Namespace, has_run: tuple[bool, str]) -> dict[str, Any]:
    script = os.path.join(CASES, case, "train.py")
    builder = os.path.relpath(os.path.join(CASES, case, "builder.py"), ROOT)
    with open(os.path.join(CASES, case, "source.json")) as f:
        row: dict[str, Any] = {"case": case, "source": json.load(f)}
    if not os.path.exists(script):
        row["error"] = ("no train.py\nHINT: python scenarios/scripts/get_scripts.py "
                        "[--source-root REPO=DIR] writes the published scripts")
        return row
    try:
        info = describe(builder)
    except RuntimeError as exc:  # the builder does not load here: this case's row says why, the rest run
        row["error"] = str(exc)
        return row
    row["expected"] = info["expected"]
    if info.get("run_expected"):
        row["run_expected"] = info["run_expected"]
    with tempfile.TemporaryDirectory(prefix=f"pipediag-scripts-{case}-") as tmp, cpu_lock(args.lock):
        try:
            _run_both(case, script, builder, info, row, tmp, args, has_run)
        except RuntimeError as exc:  # its data could not be made (make_data.py failed): say so in its row
            row.setdefault("run", {"error": str(exc)})
            row.setdefault("diagnose", {"error": str(exc)})
        finally:
            if args.keep:  # the two JSON reports, to read the evidence behind a verdict
                os.makedirs(args.keep, exist_ok=True)
                for name in ("run.json", "diagnose.json"):
                    if os.path.exists(os.path.join(tmp, name)):
                        shutil.copy(os.path.join(tmp, name), os.path.join(args.keep, f"{case}-{name}"))
    row["agree"] = None if "run_expected" in row else agreement(row["run"], row["diagnose"])
    return row


def _run_both(case: str, script: str, builder: str, info: dict[str, Any], row: dict[str, Any], tmp: str,
              args: argparse.Namespace, has_run: tuple[bool, str]) -> None:
    """The script under `pipediag run` (and plainly with --plain), then diagnose on the builder form."""
    if args.plain:
        spec = make_data(case, os.path.join(tmp, "plain"))
        env = child_env({**spec["env"], "MPLBACKEND": "Agg"})
        row["plain"] = _timed([sys.executable, script], spec["cwd"], env, args.timeout)
    if has_run[0]:
        spec = make_data(case, os.path.join(tmp, "run"))
        json_path = os.path.join(tmp, "run.json")
        env = child_env({**spec["env"], "MPLBACKEND": "Agg"})
        outcome = _timed([sys.executable, "-m", "pipediag", "run", "--json", json_path, script],
                         spec["cwd"], env, args.timeout)
        row["run"] = _judged(outcome, json_path, row.get("run_expected") or row["expected"])
    else:
        row["run"] = {"error": has_run[1]}
    json_path = os.path.join(tmp, "diagnose.json")
    outcome = _timed(diagnose_cmd(builder, info, args.max_seconds, json_path), ROOT, child_env(), args.timeout)
    row["diagnose"] = _judged(outcome, json_path, row["expected"])


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def _said(side: dict[str, Any] | None) -> str:
    if not side:
        return "—"
    if "found" not in side:
        return _cell("not run: " + side.get("error", "?").splitlines()[0] + (f" ({side['tail']})" if side.get("tail") else ""))
    f, j = side["found"], side["judged"]
    fixes = ", ".join(sorted({x["kind"] for x in f["fixes"]})) or "no fix"
    mark = "right" if j["correct"] else "wrong"
    return f"{f['bottleneck']}, {f['stage'] or 'no stage'}, {fixes} ({mark})"


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"# `pipediag run` on published scripts vs `diagnose` on their builder form ({meta['date']})", "",
             f"`{meta['command']}` on {meta['cpus']} logical CPUs, "
             f"{'holding ' + meta['lock'] if meta['lock'] else 'the lock taken outside'}; pipediag {meta['commit']}.", "",
             "| case | expected | `pipediag run` | `diagnose` (builder) | agree | plain script |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if "expected" not in r:
            lines.append(f"| {r['case']} | — | {_cell(r.get('error', '').splitlines()[0])} | | | |")
            continue
        e = r["expected"]
        expected = f"{e['bottleneck']}, {e['stage'] or 'no stage'}"
        if r.get("run_expected"):
            s = r["run_expected"]
            expected = f"builder: {expected}; script: {s['bottleneck']}, {s['stage'] or 'no stage'}"
        agree = r.get("agree")
        agree_text = ("not expected (the script's loop differs)" if r.get("run_expected") else
                      "—" if agree is None else ", ".join(k for k, ok in agree.items() if ok) or "no")
        plain = r.get("plain")
        plain_text = "—" if not plain else f"exit {plain['exit_code']}, {plain['wall_s']:.0f} s"
        lines.append(f"| {r['case']} | {expected} | {_said(r.get('run'))} | {_said(r.get('diagnose'))} | "
                     f"{agree_text} | {plain_text} |")
    return "\n".join(lines) + "\n"


def _commit() -> str:
    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return result.stdout.strip() or "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"case names (default: all of {os.path.relpath(CASES, ROOT)})")
    parser.add_argument("--plain", action="store_true", help="also run each script plainly (exit code, seconds)")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="diagnose's per-mode cap (default 10)")
    parser.add_argument("--timeout", type=float, default=600.0, help="per command, seconds (default 600)")
    parser.add_argument("--lock", default="/tmp/cpu.lock", help="the CPU lock file (default /tmp/cpu.lock)")
    parser.add_argument("--no-lock", dest="lock", action="store_const", const=None, help="run without the lock")
    parser.add_argument("--keep", metavar="DIR", help="copy each case's run.json and diagnose.json into DIR")
    parser.add_argument("--out", help="results basename (default benchmarks/results/run-scripts-cpu-<date>)")
    args = parser.parse_args(argv)
    names = args.cases or case_names()
    unknown = sorted(set(names) - set(case_names()))
    if unknown:
        raise SystemExit(f"no such case: {', '.join(unknown)} (have: {', '.join(case_names())})")
    has_run = run_available()
    if not has_run[0]:
        print(has_run[1], file=sys.stderr)
    rows = []
    for name in names:
        rows.append(run_case(name, args, has_run))
        print(markdown(rows[-1:], {"date": "", "command": name, "cpus": os.cpu_count(), "lock": args.lock,
                                   "commit": _commit()}).splitlines()[-1], flush=True)
    now = dt.datetime.now(dt.timezone.utc)
    meta = {"date": now.isoformat(timespec="minutes"), "cpus": os.cpu_count(), "lock": args.lock, "commit": _commit(),
            "command": "python benchmarks/run_scripts.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "pipediag_run": has_run[0] or has_run[1]}
    base = args.out or os.path.join(RESULTS, f"run-scripts-cpu-{now:%Y-%m-%d-%H%M}")
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(markdown(rows, meta))
    print(base + ".md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
