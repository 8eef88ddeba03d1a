"""The accuracy benchmark: every scenario with a known answer, through `pipediag diagnose`.

    python benchmarks/accuracy.py                 # all CPU scenarios (scenarios/*.py)
    python benchmarks/accuracy.py --set real      # the real-world corpus (scenarios/real/*.py)
    python benchmarks/accuracy.py --set all       # both, scenarios/ first
    python benchmarks/accuracy.py --only jpeg_tfrecord_serial,compute_bound
    python benchmarks/accuracy.py --set real --only tf_load_images   # or --only real/tf_load_images
    python benchmarks/accuracy.py --gpu           # scenarios/gpu/*.py (on a GPU machine)

A scenario of scenarios/real/ is named `real/<file>` in the table and the results.

For each scenario, `python -m pipediag diagnose ... --json` runs as a user would run it. Then, when
the diagnosis ran its tuned mode, a second process builds that tuned pipeline from the saved
diagnosis (`pipediag.tuned_pipeline(..., gains_only=False)`: every change the tuned mode applied,
by its own graph rewrite and checks) and measures it with `pipediag.compare`
against the scenario's `expert_dataset()` and against AUTOTUNE-only (the user's pipeline with only
`tf.data.Options` autotune and a final prefetch), each feeding the scenario's own step in
interleaved rounds: every ratio comes with its 95% interval, instead of being the ratio of two
timings taken at different moments in different processes (on this shared machine those moved by
up to 30% for the same pipeline). The table compares expected and found (bottleneck, stage, fix
kinds) and shows time-to-verdict, the diagnosis' throughputs and the two ratios; the totals give
correct K of N, the median time-to-verdict, and each ratio goal of the anatomy issue: met by
the point estimate, and which misses the interval itself settles. The table is printed and
written, with the date and the machine, to benchmarks/results/.

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
# The CPU sets: scenarios/ (planted cases written here) and scenarios/real/ (pipelines adapted from
# public code: the TF tutorials, tensorflow/models, keras-io, tfds, flax).
SETS = {"cpu": ("",), "real": ("real",), "all": ("", "real")}


def _in_folder(folder: str) -> list[str]:
    return sorted(p for p in glob.glob(os.path.join(folder, "*.py"))
                  if not os.path.basename(p).startswith("_") and _has_expected(p))


def scenario_name(path: str) -> str:
    """`jpeg_tfrecord_serial`, or `real/tf_load_images` for a scenario of scenarios/real/."""
    stem = os.path.splitext(os.path.basename(path))[0]
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return f"{folder}/{stem}" if folder == "real" else stem


def scenario_paths(gpu: bool = False, only: list[str] | None = None, which: str = "cpu") -> list[str]:
    """The scenario files of a set (`cpu`: scenarios/, `real`: scenarios/real/, `all`: both), or
    of scenarios/gpu/. `only` picks some by name: `tf_load_images` or `real/tf_load_images`."""
    if gpu:
        paths = _in_folder(os.path.join(SCENARIOS, "gpu"))
    else:
        if which not in SETS:
            raise SystemExit(f"no such scenario set: {which} (have: {', '.join(SETS)})")
        paths = [p for sub in SETS[which] for p in _in_folder(os.path.join(SCENARIOS, sub))]
    if only:
        names = {scenario_name(p): p for p in paths}
        for p in paths:  # a real/ scenario answers to its file name too, where that is not ambiguous
            names.setdefault(os.path.splitext(os.path.basename(p))[0], p)
        missing = [n for n in only if n not in names]
        if missing:
            raise SystemExit(f"no such scenario: {', '.join(missing)} (have: {', '.join(map(scenario_name, paths))})")
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
    name = "scenario_" + scenario_name(path).replace("/", "_")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _expected(e: Any) -> dict[str, Any]:
    return {"bottleneck": e.bottleneck, "stage": e.stage, "right_fixes": list(e.right_fixes),
            "wrong_fixes": list(e.wrong_fixes)}


def describe(module: Any) -> dict[str, Any]:
    """What the benchmark needs to know about a scenario, as plain data."""
    e, r = module.EXPECTED, getattr(module, "RUN_EXPECTED", None)
    step = "model" if hasattr(module, "make_model") else "step" if hasattr(module, "make_step") else None
    return {
        "expected": _expected(e),
        # a published script's own answer under `pipediag run`, where its loop differs from the builder form
        "run_expected": None if r is None else _expected(r),
        "step": step,
        "diagnose_args": list(getattr(module, "DIAGNOSE_ARGS", ())),
        "batch_format": getattr(module, "BATCH_FORMAT", "tf"),
        # Environment the scenario's processes need, set before its framework is first imported
        # (KERAS_BACKEND=jax for Keras on JAX).
        "env": dict(getattr(module, "ENV", {})),
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


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", COLUMNS="120", **(extra or {}))
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


# -- the ratios: tuned against the expert and against AUTOTUNE-only, in one process ---------
def _batch_size_arg(args: list[str]) -> int | None:
    for i, a in enumerate(args):
        if a == "--batch-size" and i + 1 < len(args):
            return int(args[i + 1])
    return None


def tuned_of(builder: Any, diagnosis_path: str, tuning: list[dict[str, Any]], max_seconds: float,
             input_batches_per_sec: float | None, build: Any) -> tuple[Any, list[str]]:
    """The diagnosis' tuned pipeline exactly: `pipediag.tuned_pipeline` with every change its tuned
    mode applied (gains_only=False), from the saved diagnosis, as `pipediag fix` and the patch
    benchmark take it. Where that refuses (a change it cannot carry over), the changes are planned
    again on this process' copy (`rebuild_tuned`), and what could not be rebuilt is named."""
    from pipediag import tuned_pipeline
    from pipediag.errors import PipediagError

    try:
        result = tuned_pipeline(builder, diagnosis_path, gains_only=False)
    except PipediagError:
        return rebuild_tuned(build(builder), tuning, max_seconds, input_batches_per_sec)
    wanted = {(c["kind"], c["stage"]) for c in tuning if c["applied"]}
    rebuilt = {(c.kind, c.stage) for c in result.applied}
    return result.dataset, sorted(f"{k}@{s}" for k, s in wanted - rebuilt)


def rebuild_tuned(dataset: Any, tuning: list[dict[str, Any]], max_seconds: float,
                  input_batches_per_sec: float | None) -> tuple[Any, list[str]]:
    """The diagnosis' tuned pipeline, built again with pipediag's own tuning code: the changes the
    diagnosis applied (kind and stage, from its JSON), planned on this process' copy of the
    pipeline. Returns the dataset and any applied change that could not be rebuilt."""
    from pipediag.tuner.rewrite import build, facts_for, plan_tuning

    wanted = {(c["kind"], c["stage"]) for c in tuning if c["applied"]}
    facts = facts_for(dataset, ram_budget_bytes=None, fill_budget_seconds=max_seconds,
                      latency_bound=("threading", None) in wanted)
    plan = plan_tuning(dataset, facts, input_batches_per_sec=input_batches_per_sec)
    keys = [c.key for c in plan.candidates if (c.kind, c.stage) in wanted]
    tuned = build(plan, keys)
    rebuilt = {(c.kind, c.stage) for c in tuned.applied}
    return tuned.dataset, sorted(f"{k}@{s}" for k, s in wanted - rebuilt)


def _filled(dataset: Any, batches: int) -> Any:
    """The dataset after one pass that fills its cache: `batches` of them and one more, so the
    cache has seen the end of its input and is complete for every later iterator."""
    iterator = iter(dataset)
    for _ in range(batches + 1):
        next(iterator)
    del iterator
    return dataset


def _interval(comparison: Any) -> dict[str, Any]:
    iv = comparison.intervals.get("fed")
    fed = {side: comparison.sides[side].get("fed") for side in ("A", "B")}
    return {
        "ratio": None if iv is None else iv.ratio,
        "low": None if iv is None else iv.low,
        "high": None if iv is None else iv.high,
        "rounds": None if iv is None else iv.rounds,
        "a_batches_per_sec": None if fed["A"] is None else fed["A"].rate,
        "b_batches_per_sec": None if fed["B"] is None else fed["B"].rate,
        "stop_reason": comparison.stop_reason,
        "elapsed_s": comparison.elapsed_s,
    }


def measure_ratios(path: str, diagnosis_path: str, max_seconds: float, compare_seconds: float) -> dict[str, Any]:
    """Runs in its own process (`--ratios`), after the diagnosis: `pipediag.compare` of the tuned
    pipeline against the expert's and against AUTOTUNE-only (the user's pipeline with autotune
    options and a final prefetch), each feeding the scenario's own step in interleaved rounds, so
    a ratio comes with its 95% interval and is not the ratio of two separate processes' timings."""
    import pipediag.backends.tf  # noqa: F401  (TensorFlow with pipediag's log filtering)
    from pipediag import compare
    from pipediag.backends.tf import tf
    from pipediag.modes.compare import FED, ComparePlan

    module = load_scenario(path)
    info = describe(module)
    with open(diagnosis_path) as f:
        data = json.load(f)
    found = read_diagnosis(data)
    batch_size = _batch_size_arg(info["diagnose_args"])

    def build(fn):
        kwargs = {}
        if batch_size is not None and "batch_size" in inspect.signature(fn).parameters:
            kwargs["batch_size"] = batch_size
        return fn(**kwargs)

    def autotune_only():
        options = tf.data.Options()
        options.autotune.enabled = True
        return build(module.make_dataset).prefetch(tf.data.AUTOTUNE).with_options(options)

    expert = build(module.expert_dataset)
    if hasattr(module, "EXPERT_WARMUP_BATCHES"):  # e.g. one epoch, so the expert's cache is full (tuned's is)
        expert = _filled(expert, module.EXPERT_WARMUP_BATCHES)
    tuned_dataset, not_rebuilt = tuned_of(module.make_dataset, diagnosis_path, found["tuning"], max_seconds,
                                          _rate(data, "input_only"), build)
    step_kwargs: dict[str, Any] = {"batch_format": info["batch_format"]}
    if info["step"] == "model":
        step_kwargs["model"] = module.make_model()
    else:
        step_kwargs["step"] = module.make_step()
    plan = ComparePlan(max_seconds=compare_seconds, kinds=(FED,))
    out: dict[str, Any] = {"info": info, "not_rebuilt": not_rebuilt}
    for name, baseline in (("vs_expert", expert), ("vs_autotune", autotune_only())):
        comparison = compare(baseline, tuned_dataset, plan=plan, label_a=name[3:], label_b="tuned", **step_kwargs)
        out[name] = _interval(comparison)
    return out


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


def run_scenario(path: str, max_seconds: float, compare_seconds: float, lock: bool,
                 keep_dir: str | None) -> dict[str, Any]:
    """One scenario: the diagnosis, then (for a diagnosis that ran its tuned mode) the tuned
    pipeline compared with the expert's and with AUTOTUNE-only. `lock`: take the CPU lock around it."""
    name = scenario_name(path)
    row: dict[str, Any] = {"scenario": name, "path": os.path.relpath(path, ROOT)}
    with tempfile.TemporaryDirectory(prefix="pipediag-accuracy-") as tmp, cpu_lock(lock):
        described = subprocess.run([sys.executable, os.path.abspath(__file__), "--describe", path],
                                   capture_output=True, text=True, env=child_env(), cwd=ROOT)
        if described.returncode != 0:  # read in a child: importing a scenario imports its framework
            row["error"] = "loading the scenario failed: " + _tail(described.stderr)
            return row
        info = json.loads(described.stdout.strip().splitlines()[-1])
        row["expected"] = info["expected"]
        json_path = os.path.join(keep_dir or tmp, f"{name.replace('/', '-')}.json")
        cmd = diagnose_command(row["path"], info, max_seconds, json_path)
        prefix = [f"{k}={v}" for k, v in sorted(info.get("env", {}).items())]
        row["command"] = " ".join(prefix + ["python"] + cmd[1:-2])  # without the temporary --json path
        start = time.monotonic()
        result = subprocess.run(cmd, capture_output=True, text=True, env=child_env(info.get("env")), cwd=ROOT)
        row["wall_s"] = time.monotonic() - start
        row["exit_code"] = result.returncode
        if not os.path.exists(json_path):
            row["error"] = f"diagnose exited {result.returncode} without a JSON: " + _tail(result.stderr)
            return row
        with open(json_path) as f:
            row["found"] = read_diagnosis(json.load(f))
        row["judged"] = judge(row["expected"], row["found"])
        row["ratios"] = None
        if row["found"]["tuned"] is None:
            return row
        ratios_json = os.path.join(tmp, "ratios.json")
        measured = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--ratios", path, "--diagnosis", json_path,
             "--max-seconds", str(max_seconds), "--compare-seconds", str(compare_seconds), "--out", ratios_json],
            capture_output=True, text=True, env=child_env(info.get("env")), cwd=ROOT,
        )
        if measured.returncode != 0 or not os.path.exists(ratios_json):
            row["ratios_error"] = "comparing tuned with expert and AUTOTUNE failed: " + _tail(measured.stderr)
            return row
        with open(ratios_json) as f:
            row["ratios"] = json.load(f)
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


def _ratio_of(r: dict[str, Any], name: str) -> dict[str, Any] | None:
    ratios = r.get("ratios") or {}
    iv = ratios.get(name)
    return iv if iv and iv.get("ratio") else None


def _ratio_text(iv: dict[str, Any] | None) -> str:
    return "—" if iv is None else f"{iv['ratio']:.2f} ({iv['low']:.2f}–{iv['high']:.2f})"


def _baseline_rate(r: dict[str, Any], name: str) -> str:
    ratios = r.get("ratios") or {}
    iv = ratios.get(name)
    if not iv:
        return "—"
    if iv.get("a_batches_per_sec"):
        return _num(iv["a_batches_per_sec"])
    return iv.get("stop_reason") or "—"


def table_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in rows:
        if "error" in r:
            out.append([r["scenario"], "error", r["error"][:80]] + [""] * 9)
            continue
        e, f, j = r["expected"], r["found"], r["judged"]
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
            _baseline_rate(r, "vs_expert"),
            _baseline_rate(r, "vs_autotune"),
            _ratio_text(_ratio_of(r, "vs_expert")),
            _ratio_text(_ratio_of(r, "vs_autotune")),
        ])
    return out


HEADERS = ["scenario", "bottleneck exp / found", "stage exp / found", "fixes found (right?)", "correct",
           "verdict s", "pipeline b/s", "tuned b/s", "expert b/s", "AUTOTUNE b/s", "tuned/expert (95%)",
           "tuned/AUTOTUNE (95%)"]

REWRITES_AUTOTUNE_NEVER_ADDS = ("cache", "interleave", "vectorize_map")


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _goal(rows: list[dict[str, Any]], name: str, at_least: float) -> dict[str, Any]:
    """A ratio goal over rows: met by the point estimate, and which misses or meets the 95%
    interval itself settles (its high end below the goal: clearly missed)."""
    measured = [(r["scenario"], iv) for r in rows if (iv := _ratio_of(r, name))]
    return {
        "goal": at_least,
        "n": len(measured),
        "met": sorted(n for n, iv in measured if iv["ratio"] >= at_least),
        "missed": sorted(n for n, iv in measured if iv["ratio"] < at_least),
        "clearly_missed": sorted(n for n, iv in measured if iv["high"] < at_least),
        "not_measured": sorted(r["scenario"] for r in rows if _ratio_of(r, name) is None),
        "geomean": _geomean([iv["ratio"] for _, iv in measured]),
        "min": min((iv["ratio"] for _, iv in measured), default=None),
    }


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if "judged" in r]
    input_rows = [r for r in ok if r["expected"]["bottleneck"] == "input"]
    rewritten = [r for r in input_rows
                 if any(c["applied"] and c["kind"] in REWRITES_AUTOTUNE_NEVER_ADDS for c in r["found"]["tuning"])]
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
        "tuned_vs_expert": _goal(input_rows, "vs_expert", 0.95),
        "tuned_vs_autotune": _goal(input_rows, "vs_autotune", 1.0),
        "tuned_vs_autotune_rewritten": _goal(rewritten, "vs_autotune", 1.2),
    }


def _goal_line(title: str, g: dict[str, Any]) -> str:
    text = (f"{title} (≥ {g['goal']:g}×): met {len(g['met'])} of {g['n']}; geometric mean {_num(g['geomean'], 2)}, "
            f"min {_num(g['min'], 2)}")
    if g["missed"]:
        text += f"; below: {', '.join(g['missed'])}"
        text += f" (interval wholly below: {', '.join(g['clearly_missed']) or 'none'})"
    if g["not_measured"]:
        text += f"; not measured: {', '.join(g['not_measured'])}"
    return text


def totals_lines(t: dict[str, Any]) -> list[str]:
    n = t["scenarios"]
    return [
        f"correct: {t['correct']} of {n} (bottleneck {t['bottleneck_correct']}/{n}, "
        f"stage {t['stage_correct']}/{t['stage_judged']} judged, fixes {t['fixes_correct']}/{n}"
        + (f", {t['errors']} failed to run" if t["errors"] else "") + ")",
        f"time to verdict: median {_num(t['median_verdict_s'])} s, max {_num(t['max_verdict_s'])} s",
        f"input-bound scenarios: {t['input_scenarios']}",
        _goal_line("tuned/expert", t["tuned_vs_expert"]),
        _goal_line("tuned/AUTOTUNE-only, never slower", t["tuned_vs_autotune"]),
        _goal_line("tuned/AUTOTUNE-only where cache, interleave or vectorizing applied", t["tuned_vs_autotune_rewritten"]),
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
    except Exception:  # noqa: BLE001 (no driver, no library: no GPU to name)
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
        "- throughputs are training steps per second (batches/s) with the scenario's own step. pipeline and "
        "tuned b/s come from the diagnosis. The ratios come from `pipediag.compare` in a second process right "
        "after it: the diagnosis' tuned pipeline (`pipediag.tuned_pipeline` of the saved diagnosis, every applied change) "
        "against the scenario's expert pipeline, and against AUTOTUNE-only (the user's pipeline with autotune "
        "options and a final prefetch), feeding the same step in interleaved rounds (fed turns only, each "
        f"comparison capped at {meta['compare_seconds']:g} s); each ratio is the geometric mean of the rounds' "
        "ratios with its 95% interval, and expert/AUTOTUNE b/s are those comparisons' own rates",
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
        ratios = r.get("ratios")
        if r.get("ratios_error"):
            lines.append(f"- {r['ratios_error']}")
        elif ratios is None:
            lines.append("- no tuned mode ran: nothing to compare")
        else:
            if ratios["not_rebuilt"]:
                lines.append(f"- not rebuilt for the comparisons: {', '.join(ratios['not_rebuilt'])}")
            for name, label in (("vs_expert", "expert"), ("vs_autotune", "AUTOTUNE-only")):
                iv = ratios[name]
                lines.append(f"- tuned vs {label}: {_ratio_text(iv if iv.get('ratio') else None)}, "
                             f"{iv['rounds'] or 0} rounds, stopped: {iv['stop_reason']}, {iv['elapsed_s']:.0f} s")
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
    parser.add_argument("--gpu", action="store_true", help="run scenarios/gpu/*.py instead of a CPU set")
    parser.add_argument("--set", dest="which", choices=sorted(SETS), default="cpu",
                        help="CPU scenarios to run: cpu = scenarios/*.py (default), real = scenarios/real/*.py, "
                             "all = both")
    parser.add_argument("--only", help="comma-separated scenario names")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="per-mode cap, as diagnose's (default 10)")
    parser.add_argument("--no-lock", action="store_true", help=f"do not take {LOCK} (default: held for the whole run)")
    parser.add_argument("--lock-each", action="store_true", help="take the lock per scenario, letting it go in between")
    parser.add_argument("--keep-json", metavar="DIR", help="keep each diagnosis JSON in DIR")
    parser.add_argument("--results", default=RESULTS, help="folder for the result file (default benchmarks/results)")
    parser.add_argument("--compare-seconds", type=float, default=30.0,
                        help="cap of each comparison of tuned with expert and with AUTOTUNE-only (default 30)")
    parser.add_argument("--describe", metavar="SCENARIO", help=argparse.SUPPRESS)  # internal: a scenario's info
    parser.add_argument("--ratios", metavar="SCENARIO", help=argparse.SUPPRESS)  # internal: the comparisons
    parser.add_argument("--diagnosis", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.describe:
        print(json.dumps(describe(load_scenario(args.describe))))
        return 0
    if args.ratios:
        with open(args.out, "w") as f:
            json.dump(measure_ratios(args.ratios, args.diagnosis, args.max_seconds, args.compare_seconds), f)
        return 0

    paths = scenario_paths(args.gpu, args.only.split(",") if args.only else None, args.which)
    if not paths:
        where = ["gpu"] if args.gpu else SETS[args.which]
        print(f"no scenarios in {', '.join(os.path.join(SCENARIOS, w) for w in where)}")
        return 1
    if args.keep_json:
        os.makedirs(args.keep_json, exist_ok=True)
    lock = not args.no_lock and not args.gpu  # the GPU machine is not shared
    rows = []
    with cpu_lock(lock and not args.lock_each):
        started = time.monotonic()
        for path in paths:
            print(f"… {scenario_name(path)}", file=sys.stderr, flush=True)
            rows.append(run_scenario(path, args.max_seconds, args.compare_seconds, lock=lock and args.lock_each,
                                     keep_dir=args.keep_json))
        total_s = time.monotonic() - started
    t = totals(rows)
    render(rows, t)
    now = dt.datetime.now(dt.timezone.utc)
    meta = {
        "kind": "gpu" if args.gpu else {"cpu": "cpu", "real": "cpu-real", "all": "cpu-all"}[args.which],
        "date": now.isoformat(timespec="seconds"),
        "machine": machine(),
        "command": "python benchmarks/accuracy.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip(),
        "max_seconds": args.max_seconds,
        "compare_seconds": args.compare_seconds,
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
