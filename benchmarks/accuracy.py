"""The accuracy benchmark: every scenario with a known answer, through `pipediag diagnose`.

    python benchmarks/accuracy.py                 # all CPU scenarios (scenarios/*.py)
    python benchmarks/accuracy.py --only jpeg_tfrecord_serial,compute_bound
    python benchmarks/accuracy.py --gpu           # scenarios/gpu/*.py (on a GPU machine)

For each scenario, one process measures what TensorFlow alone and an expert get (the user's
pipeline with only `tf.data.Options` autotune and a final prefetch; the scenario's
`expert_dataset()`), each feeding the scenario's own step through pipediag's mode runner with
the same stop rule, so the four throughputs are measured alike. Then `python -m pipediag diagnose
... --json` runs as a user would run it. The table compares expected and found (bottleneck, stage,
fix kinds) and shows time-to-verdict and the four throughputs; the totals give correct K of N, the
median time-to-verdict, and tuned/expert and tuned/AUTOTUNE ratios (geometric means over the
input-bound scenarios). The table is printed and written, with the date and the machine, to
benchmarks/results/.

Timings collide when other TensorFlow work runs at the same time: the benchmark takes the CPU lock
(/tmp/pipediag-cpu.lock) itself and holds it for the whole run, so that all scenarios are measured
under the same conditions (`--lock-each` lets it go between scenarios; `--no-lock` skips it). Do
not wrap the command in `flock`: that would deadlock.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import glob
import importlib.util
import inspect
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = os.path.join(ROOT, "scenarios")
RESULTS = os.path.join(ROOT, "benchmarks", "results")
LOCK = "/tmp/pipediag-cpu.lock"


# -- scenarios ------------------------------------------------------------------------------
def scenario_paths(gpu: bool = False, only: list[str] | None = None) -> list[str]:
    folder = os.path.join(SCENARIOS, "gpu") if gpu else SCENARIOS
    paths = sorted(p for p in glob.glob(os.path.join(folder, "*.py"))
                   if not os.path.basename(p).startswith("_") and _has_expected(p))
    if only:
        names = {os.path.splitext(os.path.basename(p))[0]: p for p in paths}
        missing = [n for n in only if n not in names]
        if missing:
            raise SystemExit(f"no such scenario: {', '.join(missing)} (have: {', '.join(names)})")
        paths = [names[n] for n in only]
    return paths


def _has_expected(path: str) -> bool:
    """A scenario states its answer (`EXPECTED = ...`); helpers beside them (scenarios/gpu/common.py,
    the sweep's and scale's steps) do not."""
    with open(path) as f:
        return "\nEXPECTED = " in f.read()


def load_scenario(path: str) -> Any:
    """Import a scenario file the way pipediag imports a target file: its folder on sys.path
    (and scenarios/ itself, for the shared helpers of scenarios/gpu/)."""
    folder = os.path.dirname(os.path.abspath(path))
    for where in (SCENARIOS, folder):
        if where not in sys.path:
            sys.path.insert(0, where)
    name = "scenario_" + os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def describe(module: Any) -> dict[str, Any]:
    """What the benchmark needs to know about a scenario, as plain data."""
    e = module.EXPECTED
    step = "model" if hasattr(module, "make_model") else "step" if hasattr(module, "make_step") else None
    return {
        "expected": {"bottleneck": e.bottleneck, "stage": e.stage, "right_fixes": list(e.right_fixes),
                     "wrong_fixes": list(e.wrong_fixes)},
        "step": step,
        "diagnose_args": list(getattr(module, "DIAGNOSE_ARGS", ())),
        "batch_format": getattr(module, "BATCH_FORMAT", "tf"),
    }


def diagnose_command(path: str, info: dict[str, Any], max_seconds: float, json_path: str) -> list[str]:
    cmd = [sys.executable, "-m", "pipediag", "diagnose", f"{path}:make_dataset"]
    if info["step"] == "model":
        cmd += ["--model", f"{path}:make_model"]
    elif info["step"] == "step":
        cmd += ["--step", f"{path}:make_step"]
    if info["batch_format"] != "tf":
        cmd += ["--batch-format", info["batch_format"]]
    return cmd + list(info["diagnose_args"]) + ["--max-seconds", str(max_seconds), "--quiet", "--json", json_path]


def child_env() -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", COLUMNS="120")
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# -- reading a diagnosis --------------------------------------------------------------------
def _stage_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("label", "stage", "name"):
            if isinstance(value.get(key), str):
                return value[key]
    return str(value)


def found_stage(data: dict[str, Any]) -> tuple[bool, str | None]:
    """(reported, stage): where the diagnosis names its bottleneck stage, if this pipediag
    reports one at all. The stage the verdict blames comes first (`verdict.stage`: a shuffle
    buffer that holds too much memory), then the anatomy's slow stage (`bottleneck_stage`)."""
    verdict = data.get("verdict") or {}
    if isinstance(verdict, dict) and verdict.get("stage") is not None:
        return True, _stage_text(verdict["stage"])
    places = [data, data.get("anatomy") or {}, data.get("dataset") or {}, verdict]
    for place in places:
        if isinstance(place, dict) and "bottleneck_stage" in place:
            return True, _stage_text(place["bottleneck_stage"])
    return False, None


def _rate(data: dict[str, Any], mode: str) -> float | None:
    m = (data.get("modes") or {}).get(mode)
    return None if not m else m.get("batches_per_sec")


def read_diagnosis(data: dict[str, Any]) -> dict[str, Any]:
    reported, stage = found_stage(data)
    verdict = data.get("verdict") or {}
    return {
        "bottleneck": verdict.get("bottleneck"),
        "confidence": verdict.get("confidence"),
        "headline": verdict.get("headline"),
        "stage_reported": reported,
        "stage": stage,
        "fixes": [{"kind": f["kind"], "stage": f.get("stage"), "measured_speedup": f.get("measured_speedup")}
                  for f in data.get("fixes", [])],
        "elapsed_s": data.get("elapsed_s"),
        "pipeline": _rate(data, "pipeline"),
        "tuned": _rate(data, "tuned"),
        "synthetic": _rate(data, "synthetic"),
        "tuning": [{"kind": c["kind"], "stage": c.get("stage"), "applied": c["applied"], "reason": c.get("reason")}
                   for c in (data.get("tuning") or {}).get("changes", [])],
    }


# -- judging --------------------------------------------------------------------------------
def _matches(spec: str, fix: dict[str, Any]) -> bool:
    kind, _, stage = spec.partition("@")
    return fix["kind"] == kind and (not stage or fix.get("stage") == stage)


def judge(expected: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
    """Right or wrong, part by part. The stage is judged only where the scenario plants one and
    the diagnosis reports one (a compute-bound case has no stage at fault: whatever stage the
    anatomy finds slowest is not judged)."""
    bottleneck_ok = found["bottleneck"] == expected["bottleneck"]
    judged = found["stage_reported"] and expected["stage"] is not None
    stage_ok = (found["stage"] == expected["stage"]) if judged else None
    wrong = sorted({spec for spec in expected["wrong_fixes"] for f in found["fixes"] if _matches(spec, f)})
    right = sorted({f["kind"] for f in found["fixes"] if f["kind"] in expected["right_fixes"]})
    fixes_ok = not wrong and (bool(right) or not expected["right_fixes"])
    return {
        "bottleneck_ok": bottleneck_ok,
        "stage_ok": stage_ok,
        "fixes_ok": fixes_ok,
        "wrong_fixes_given": wrong,
        "right_fixes_given": right,
        "correct": bottleneck_ok and fixes_ok and stage_ok is not False,
    }


# -- the baselines: AUTOTUNE-only and expert, measured like pipediag's modes ----------------
def _batch_size_arg(args: list[str]) -> int | None:
    for i, a in enumerate(args):
        if a == "--batch-size" and i + 1 < len(args):
            return int(args[i + 1])
    return None


def measure_baselines(path: str, max_seconds: float) -> dict[str, Any]:
    """Runs in its own process (`--measure`): the scenario's step fed by the AUTOTUNE-only
    pipeline and by the expert's, each timed by pipediag's own mode runner."""
    import pipediag.backends.tf  # noqa: F401  (TensorFlow with pipediag's log filtering)
    from pipediag.backends.tf import tf
    from pipediag.modes.feeds import BatchFeed
    from pipediag.modes.runner import StopRule, run_mode
    from pipediag.steps.keras_step import keras_step
    from pipediag.steps.user_step import user_step

    module = load_scenario(path)
    info = describe(module)
    batch_size = _batch_size_arg(info["diagnose_args"])

    def build(fn):
        kwargs = {}
        if batch_size is not None and "batch_size" in inspect.signature(fn).parameters:
            kwargs["batch_size"] = batch_size
        return fn(**kwargs)

    if info["step"] == "model":
        step = keras_step(module.make_model(), "make_model")
    elif info["step"] == "step":
        step = user_step(module.make_step(), "make_step", info["batch_format"])
    else:
        raise SystemExit(f"{path}: a scenario needs make_model() or make_step()")

    def autotune_only():
        options = tf.data.Options()
        options.autotune.enabled = True
        return build(module.make_dataset).prefetch(tf.data.AUTOTUNE).with_options(options)

    rule = StopRule(max_seconds=max_seconds)
    results: dict[str, Any] = {}
    for name, make, warm in (("autotune", autotune_only, 0),
                             ("expert", lambda: build(module.expert_dataset),
                              getattr(module, "EXPERT_WARMUP_BATCHES", 0))):
        feed = BatchFeed(make(), info["batch_format"])
        fill_start = time.perf_counter()
        for _ in range(warm):  # e.g. one epoch, so the expert's cache is full (pipediag fills its own too)
            feed()
        fill_s = time.perf_counter() - fill_start if warm else None
        # As diagnose runs it: a JAX or PyTorch step with one step in flight while the next batch is fetched.
        run = run_mode(name, feed, None if step.dispatch else step.run, rule, clock_ns=time.monotonic_ns,
                       first_step_is_compile=True, dispatch=step.dispatch)
        feed.close()
        total_ns = sum(run.step_ns)
        results[name] = {
            "batches_per_sec": run.steps / (total_ns / 1e9) if run.steps and total_ns > 0 else None,
            "steps": run.steps,
            "stop_reason": run.stop_reason,
            "error": None if run.error is None else f"{run.error.type}: {run.error.message.splitlines()[0][:160]}",
            "warmup_fill_s": fill_s,
        }
    return {"info": info, "baselines": results}


# -- running one scenario -------------------------------------------------------------------
@contextmanager
def cpu_lock(enabled: bool):
    if not enabled:
        yield
        return
    with open(LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_scenario(path: str, max_seconds: float, lock: bool, keep_dir: str | None) -> dict[str, Any]:
    """One scenario: baselines, then the diagnosis. `lock`: take the CPU lock around it."""
    name = os.path.splitext(os.path.basename(path))[0]
    row: dict[str, Any] = {"scenario": name, "path": os.path.relpath(path, ROOT)}
    with tempfile.TemporaryDirectory(prefix="pipediag-accuracy-") as tmp, cpu_lock(lock):
        baselines_json = os.path.join(tmp, "baselines.json")
        measured = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--measure", path, "--max-seconds", str(max_seconds),
             "--out", baselines_json],
            capture_output=True, text=True, env=child_env(), cwd=ROOT,
        )
        if measured.returncode != 0 or not os.path.exists(baselines_json):
            row["error"] = "baselines failed: " + _tail(measured.stderr)
            return row
        with open(baselines_json) as f:
            base = json.load(f)
        row["expected"] = base["info"]["expected"]
        row["baselines"] = base["baselines"]

        json_path = os.path.join(keep_dir or tmp, f"{name}.json")
        cmd = diagnose_command(row["path"], base["info"], max_seconds, json_path)
        row["command"] = " ".join(["python"] + cmd[1:-2])  # without the temporary --json path
        start = time.monotonic()
        result = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), cwd=ROOT)
        row["wall_s"] = time.monotonic() - start
        row["exit_code"] = result.returncode
        if not os.path.exists(json_path):
            row["error"] = f"diagnose exited {result.returncode} without a JSON: " + _tail(result.stderr)
            return row
        with open(json_path) as f:
            row["found"] = read_diagnosis(json.load(f))
    row["judged"] = judge(row["expected"], row["found"])
    return row


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:])


# -- the table ------------------------------------------------------------------------------
def _num(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _mark(ok: bool | None) -> str:
    return "—" if ok is None else ("✓" if ok else "✗")


def table_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in rows:
        if "error" in r:
            out.append([r["scenario"], "error", r["error"][:80]] + [""] * 11)
            continue
        e, f, j, b = r["expected"], r["found"], r["judged"], r["baselines"]
        autotune, expert = b["autotune"]["batches_per_sec"], b["expert"]["batches_per_sec"]
        stage_found = (f["stage"] or "none") if f["stage_reported"] else "not reported"
        fixes = ", ".join(fx["kind"] for fx in f["fixes"]) or "none"
        if j["wrong_fixes_given"]:
            fixes += f" (wrong: {', '.join(j['wrong_fixes_given'])})"
        out.append([
            r["scenario"],
            f"{e['bottleneck']} / {f['bottleneck'] or '—'} {_mark(j['bottleneck_ok'])}",
            f"{e['stage'] or 'none'} / {stage_found} {_mark(j['stage_ok'])}",
            f"{fixes} {_mark(j['fixes_ok'])}",
            "✓" if j["correct"] else "✗",
            _num(f["elapsed_s"]),
            _num(f["pipeline"]),
            _num(f["tuned"]),
            _num(autotune) if autotune else (b["autotune"]["stop_reason"] if b["autotune"]["error"] else "—"),
            _num(expert) if expert else (b["expert"]["stop_reason"] if b["expert"]["error"] else "—"),
            _num(_ratio(f["tuned"], expert), 2),
            _num(_ratio(f["tuned"], autotune), 2),
        ])
    return out


HEADERS = ["scenario", "bottleneck exp / found", "stage exp / found", "fixes found (right?)", "correct",
           "verdict s", "pipeline b/s", "tuned b/s", "AUTOTUNE b/s", "expert b/s", "tuned/expert", "tuned/AUTOTUNE"]


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if "judged" in r]
    input_rows = [r for r in ok if r["expected"]["bottleneck"] == "input"]
    vs_expert = [x for r in input_rows if (x := _ratio(r["found"]["tuned"], r["baselines"]["expert"]["batches_per_sec"]))]
    vs_autotune = [x for r in input_rows
                   if (x := _ratio(r["found"]["tuned"], r["baselines"]["autotune"]["batches_per_sec"]))]
    times = [r["found"]["elapsed_s"] for r in ok if r["found"]["elapsed_s"] is not None]
    staged = [r for r in ok if r["judged"]["stage_ok"] is not None]
    return {
        "scenarios": len(rows),
        "correct": sum(r["judged"]["correct"] for r in ok),
        "bottleneck_correct": sum(r["judged"]["bottleneck_ok"] for r in ok),
        "stage_judged": len(staged),
        "stage_correct": sum(bool(r["judged"]["stage_ok"]) for r in staged),
        "fixes_correct": sum(r["judged"]["fixes_ok"] for r in ok),
        "errors": len(rows) - len(ok),
        "median_verdict_s": statistics.median(times) if times else None,
        "max_verdict_s": max(times) if times else None,
        "input_scenarios": len(input_rows),
        "tuned_over_expert_geomean": _geomean(vs_expert),
        "tuned_over_expert_min": min(vs_expert) if vs_expert else None,
        "tuned_over_autotune_geomean": _geomean(vs_autotune),
        "tuned_over_autotune_min": min(vs_autotune) if vs_autotune else None,
        "tuned_over_expert_n": len(vs_expert),
        "tuned_over_autotune_n": len(vs_autotune),
    }


def totals_lines(t: dict[str, Any]) -> list[str]:
    n = t["scenarios"]
    return [
        f"correct: {t['correct']} of {n} (bottleneck {t['bottleneck_correct']}/{n}, "
        f"stage {t['stage_correct']}/{t['stage_judged']} judged, fixes {t['fixes_correct']}/{n}"
        + (f", {t['errors']} failed to run" if t["errors"] else "") + ")",
        f"time to verdict: median {_num(t['median_verdict_s'])} s, max {_num(t['max_verdict_s'])} s",
        f"input-bound scenarios ({t['input_scenarios']}): tuned/expert geometric mean "
        f"{_num(t['tuned_over_expert_geomean'], 2)} (min {_num(t['tuned_over_expert_min'], 2)}, "
        f"n={t['tuned_over_expert_n']}); tuned/AUTOTUNE geometric mean {_num(t['tuned_over_autotune_geomean'], 2)} "
        f"(min {_num(t['tuned_over_autotune_min'], 2)}, n={t['tuned_over_autotune_n']})",
    ]


def machine() -> dict[str, Any]:
    import psutil

    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_logical": psutil.cpu_count(),
        "memory_total_gib": round(psutil.virtual_memory().total / 2**30, 1),
    }
    try:
        info["git_commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                            cwd=ROOT).stdout.strip() or None
    except OSError:
        info["git_commit"] = None
    versions = subprocess.run(
        [sys.executable, "-c", "import importlib.metadata as m\n"
         "for p in ('tensorflow-cpu','tensorflow','tensorflow-datasets','keras'):\n"
         "    try: print(p, m.version(p))\n    except m.PackageNotFoundError: pass"],
        capture_output=True, text=True,
    ).stdout.split("\n")
    info["packages"] = ", ".join(v for v in versions if v.strip())
    info["gpus"] = _gpu_names()
    return info


def _gpu_names() -> list[str]:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no driver, no library: no GPU to name
        return []
    try:
        return [str(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i)))
                for i in range(pynvml.nvmlDeviceGetCount())]
    finally:
        pynvml.nvmlShutdown()


def markdown(rows: list[dict[str, Any]], t: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = [
        f"# pipediag accuracy benchmark ({meta['kind']})",
        "",
        f"- date: {meta['date']}",
        f"- machine: {meta['machine']['platform']}, Python {meta['machine']['python']}, "
        f"{meta['machine']['cpu_logical']} logical CPUs, {meta['machine']['memory_total_gib']} GiB RAM, "
        f"GPUs: {', '.join(meta['machine']['gpus']) or 'none'}",
        f"- packages: {meta['machine']['packages']}",
        f"- pipediag at commit {meta['machine']['git_commit']}",
        f"- command: `{meta['command']}` (each mode capped at {meta['max_seconds']:g} s; "
        f"total run {meta['total_s']:.0f} s)",
        "- throughputs are training steps per second (batches/s) with the scenario's own step; pipeline and "
        "tuned come from the diagnosis, AUTOTUNE-only and expert from the same mode runner in a separate "
        "process right before it; numbers from different processes on a shared machine can differ by more "
        "than their intervals (other work may run beside the benchmark)",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in table_rows(rows)]
    lines += ["", "## Totals", ""] + [f"- {line}" for line in totals_lines(t)]
    lines += ["", "## Per scenario", ""]
    for r in rows:
        lines.append(f"### {r['scenario']}")
        if "error" in r:
            lines += ["", f"error: {r['error']}", ""]
            continue
        f, j = r["found"], r["judged"]
        lines.append("")
        lines.append(f"- `{r['command']}` (exit {r['exit_code']}, {r['wall_s']:.0f} s wall)")
        lines.append(f"- verdict: {f['bottleneck']} ({f['confidence']}): {f['headline']}")
        fixes = "; ".join(
            f"{x['kind']}" + (f" `{x['stage']}`" if x["stage"] else "")
            + (f" x{x['measured_speedup']:.2f}" if x["measured_speedup"] else " (not measured)")
            for x in f["fixes"]
        )
        lines.append(f"- fixes: {fixes or 'none'}")
        applied = "; ".join(f"{c['kind']} `{c['stage']}`" for c in f["tuning"] if c["applied"])
        lines.append(f"- tuned mode applied: {applied or 'nothing'}")
        if j["wrong_fixes_given"]:
            lines.append(f"- wrong fixes given: {', '.join(j['wrong_fixes_given'])}")
        if not j["right_fixes_given"] and r["expected"]["right_fixes"]:
            lines.append(f"- none of the right fixes given ({', '.join(r['expected']['right_fixes'])})")
        for name in ("autotune", "expert"):
            b = r["baselines"][name]
            if b["error"]:
                lines.append(f"- {name}: stopped ({b['stop_reason']}): {b['error']}")
        lines.append("")
    return "\n".join(lines) + "\n"


def render(rows: list[dict[str, Any]], t: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="pipediag accuracy", show_lines=False)
    for h in HEADERS:
        table.add_column(h, overflow="fold")
    for row in table_rows(rows):
        table.add_row(*row)
    console = Console(width=max(160, Console().width))
    console.print(table)
    for line in totals_lines(t):
        console.print(line, highlight=False)


# -- main -----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true", help="run scenarios/gpu/*.py instead of the CPU set")
    parser.add_argument("--only", help="comma-separated scenario names")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="per-mode cap, as diagnose's (default 10)")
    parser.add_argument("--no-lock", action="store_true", help=f"do not take {LOCK} (default: held for the whole run)")
    parser.add_argument("--lock-each", action="store_true", help="take the lock per scenario, letting it go in between")
    parser.add_argument("--keep-json", metavar="DIR", help="keep each diagnosis JSON in DIR")
    parser.add_argument("--results", default=RESULTS, help="folder for the result file (default benchmarks/results)")
    parser.add_argument("--measure", metavar="SCENARIO", help=argparse.SUPPRESS)  # internal: baselines of one
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.measure:
        with open(args.out, "w") as f:
            json.dump(measure_baselines(args.measure, args.max_seconds), f)
        return 0

    paths = scenario_paths(args.gpu, args.only.split(",") if args.only else None)
    if not paths:
        print(f"no scenarios in {os.path.join(SCENARIOS, 'gpu') if args.gpu else SCENARIOS}")
        return 1
    if args.keep_json:
        os.makedirs(args.keep_json, exist_ok=True)
    lock = not args.no_lock and not args.gpu  # the GPU machine is not shared
    rows = []
    with cpu_lock(lock and not args.lock_each):
        started = time.monotonic()
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0]
            print(f"… {name}", file=sys.stderr, flush=True)
            rows.append(run_scenario(path, args.max_seconds, lock=lock and args.lock_each, keep_dir=args.keep_json))
        total_s = time.monotonic() - started
    t = totals(rows)
    render(rows, t)
    now = dt.datetime.now(dt.timezone.utc)
    meta = {
        "kind": "gpu" if args.gpu else "cpu",
        "date": now.isoformat(timespec="seconds"),
        "machine": machine(),
        "command": "python benchmarks/accuracy.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip(),
        "max_seconds": args.max_seconds,
        "total_s": total_s,
    }
    os.makedirs(args.results, exist_ok=True)
    stem = os.path.join(args.results, f"accuracy-{meta['kind']}-{now.strftime('%Y-%m-%d-%H%M')}")
    with open(stem + ".md", "w") as f:
        f.write(markdown(rows, t, meta))
    with open(stem + ".json", "w") as f:
        json.dump({"meta": meta, "totals": t, "rows": rows}, f, indent=1)
    print(f"wrote {os.path.relpath(stem, ROOT)}.md and .json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
