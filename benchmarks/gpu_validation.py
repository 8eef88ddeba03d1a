"""Every H200 validation run of the GPU issue, in one go, within a time budget.

Run from the project root on the device (TensorFlow CPU build importable, JAX with CUDA):

    python benchmarks/gpu_validation.py            # results under $OUT (or ./gpu-validation-out)

What it runs, in order (each pipediag run is `python -m pipediag ...` in its own process, as a
user would run it; its JSON, stdout and stderr land in the output folder):
  1. probe     NVML + GPM on the idle GPU for ~1.5 s: which metrics this GPU and driver give.
  2. gpu tests `pytest -m gpu tests/gpu` when pytest is importable (skipped otherwise).
  3. diagnose  the scenarios in scenarios/gpu: host, small_kernels, compute, bandwidth, input,
               memory, tiny_step (host at the hand-over), keras_input and keras_compute (Keras 3
               on JAX, `--model`, KERAS_BACKEND=jax), torch_py_function — each with its expected
               verdict.
  4. sweep     scenarios/gpu/sweep.py at batch sizes 64..65536 under --gpu-memory-limit 3072.
  3b. diagnose the TensorFlow-GPU scenarios (tf_keras_input, tf_keras_compute, tf_keras_memory,
               tf_tiny_step: Keras 3 on KERAS_BACKEND=tensorflow), when TensorFlow sees a GPU.
  5. overhead  the sampler's cost on step throughput (benchmarks/sampler_overhead.py) for the
               host-bound step (the most sensitive: Python dispatch competes with the sampler
               thread for the GIL) and the compute-bound step: 10 rounds of 1.5 s on/off blocks.
Then it prints one summary table (and writes summary.json). A case that fails or times out is
reported as such; the rest still run. Nothing here decides thresholds: it reports what it saw.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCEN = "scenarios/gpu"

# name, expected verdict (and GPM refinement), extra diagnose arguments, timeout
CASES = [
    ("host", "host", [], 100),
    ("small_kernels", "host", [], 100),
    ("compute", "compute", [], 120),
    ("bandwidth", "compute/memory_bandwidth", [], 100),
    ("input", "input", [], 120),
    ("memory", "memory", [], 80),
    ("tiny_step", "host", [], 100),
    ("tiny_step_tf_batches", "host", [], 100),
    ("keras_input", "input", [], 150),
    ("keras_compute", "compute", [], 150),
    ("torch_py_function", "input", [], 150),
]
# TensorFlow's GPU build training Keras (TensorFlow backend) on the GPU (issue 25): run when
# TensorFlow sees a GPU (benchmarks/tf_gpu/ carries the build to the device), or named in --only.
TF_CASES = [
    ("tf_keras_input", "input", [], 200),
    ("tf_keras_compute", "compute", [], 200),
    ("tf_keras_memory", "memory", [], 150),
    ("tf_tiny_step", "host", [], 150),
]


def tensorflow_sees_gpu() -> bool:
    """Whether this machine's TensorFlow is a GPU build that sees a GPU (in a child process, so this
    one never starts TensorFlow beside the cases it runs)."""
    code = "import tensorflow as tf; print(bool(tf.config.list_physical_devices('GPU')))"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False
    return out.stdout.strip().endswith("True")
SWEEP_SIZES = "64,256,1024,4096,16384,65536"
SWEEP_LIMIT_MB = 3072


class Budget:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


def run(cmd: list[str], out_dir: str, name: str, timeout: float, extra_env: dict[str, str] | None = None) -> dict:
    """Run one command, keep its output, never raise."""
    env = dict(os.environ, COLUMNS="120", TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
               PYTHONUNBUFFERED="1", **(extra_env or {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), ROOT) if p)
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as error:
        rc = "timeout"
        stdout = error.stdout.decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
        stderr = error.stderr.decode() if isinstance(error.stderr, bytes) else (error.stderr or "")
    took = time.monotonic() - started
    with open(os.path.join(out_dir, f"{name}.log"), "w") as f:
        f.write(f"$ {' '.join(cmd)}\n# rc={rc} took={took:.1f}s\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n")
    return {"rc": rc, "took_s": took, "stdout_tail": stdout[-3000:], "stderr_tail": stderr[-3000:]}


def load(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


def probe(out_dir: str) -> dict:
    """NVML and GPM on the idle GPU, in this process (no TensorFlow, no JAX)."""
    sys.path.insert(0, ROOT)
    from pipediag.analysis.gpu import metrics_seen
    from pipediag.samples.gpu import GpuReader
    from pipediag.samples.sampler import Sampler

    sampler = Sampler(gpu_reader=GpuReader(), hz=10)
    with sampler:
        time.sleep(1.5)
    log = sampler.log()
    seen = metrics_seen(log)
    last = log.samples[-1].gpus[0] if log.samples and log.samples[-1].gpus else None
    driver_samples = sum(len(g.util_samples_pct or ()) for s in log.samples for g in s.gpus[:1])
    result = {
        "devices": [dataclasses.asdict(d) for d in log.gpu_devices],
        "no_gpu_reason": log.gpu_unavailable_reason,
        "available": seen.available,
        "unavailable": seen.unavailable,
        "samples": len(log.samples),
        "driver_util_samples_in_1.5s": driver_samples,
        "last_reading": None if last is None else {k: getattr(last, k) for k in last.__slots__},
        "sampler_error": None if sampler.error is None else repr(sampler.error),
    }
    with open(os.path.join(out_dir, "probe.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    return result


def scenario_kind(path: str) -> tuple[str, dict[str, str]]:
    """("model", env) for a Keras scenario (`make_model`), else ("step", env); `env` is its `ENV`
    (KERAS_BACKEND=jax), read from the source: importing it here would import its framework."""
    with open(os.path.join(ROOT, path)) as f:
        tree = ast.parse(f.read())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    env: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "ENV" for t in node.targets):
            env = ast.literal_eval(node.value)
    return ("model" if "make_model" in names else "step"), env


def batch_format(path: str) -> str:
    """A step scenario's `BATCH_FORMAT` (numpy unless it says otherwise), read from its source."""
    with open(os.path.join(ROOT, path)) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "BATCH_FORMAT" for t in node.targets):
            return ast.literal_eval(node.value)
    return "numpy"


def diagnose_case(name: str, extra: list[str], timeout: float, out_dir: str, max_seconds: float) -> dict:
    spec = f"{SCEN}/{name}.py"
    json_path = os.path.join(out_dir, f"{name}.json")
    kind, env = scenario_kind(spec)
    how = (["--model", f"{spec}:make_model"] if kind == "model"
           else ["--step", f"{spec}:make_step", "--batch-format", batch_format(spec)])
    cmd = [sys.executable, "-m", "pipediag", "diagnose", f"{spec}:make_dataset", *how,
           "--max-seconds", str(max_seconds), "--json", json_path, "--quiet", *extra]
    result = run(cmd, out_dir, name, timeout, env)
    result["json"] = load(json_path)
    return result


def sweep_case(timeout: float, out_dir: str, max_seconds: float) -> dict:
    spec = f"{SCEN}/sweep.py"
    json_path = os.path.join(out_dir, "sweep.json")
    cmd = [sys.executable, "-m", "pipediag", "sweep", f"{spec}:make_dataset", "--step", f"{spec}:make_step",
           "--batch-format", "numpy", "--batch-sizes", SWEEP_SIZES, "--gpu-memory-limit", str(SWEEP_LIMIT_MB),
           "--max-seconds", str(max_seconds), "--json", json_path, "--quiet"]
    result = run(cmd, out_dir, "sweep", timeout)
    result["json"] = load(json_path)
    return result


def overhead_case(name: str, timeout: float, out_dir: str, rounds: int, block_s: float) -> dict:
    spec = f"{SCEN}/{name}.py"
    json_path = os.path.join(out_dir, f"overhead_{name}.json")
    cmd = [sys.executable, "benchmarks/sampler_overhead.py", "--dataset", f"{spec}:make_dataset", "--step",
           f"{spec}:make_step", "--batch-format", "numpy", "--rounds", str(rounds), "--block-s", str(block_s),
           "--warmup-s", "2", "--json", json_path]
    result = run(cmd, out_dir, f"overhead_{name}", timeout)
    result["json"] = load(json_path)
    return result


def gpu_tests(out_dir: str, timeout: float) -> dict:
    try:
        import pytest  # noqa: F401
    except ImportError:
        return {"rc": "skipped", "note": "pytest is not installed here"}
    # The device's JAX/PyTorch builds may warn at import about things that are not ours; the
    # project's pytest settings turn warnings into errors, so here they are only shown.
    return run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests/gpu", "-p", "no:cacheprovider", "-rs",
                "-W", "default::DeprecationWarning", "-W", "default::FutureWarning", "-W", "default::UserWarning"],
               out_dir, "gpu_tests", timeout)


# -- the summary ------------------------------------------------------------------------------

def _f(value, fmt="{:.0f}", missing="—"):
    return missing if value is None else fmt.format(value)


def util_both_ways(d: dict, mode: str = "synthetic") -> tuple[float | None, float | None]:
    """Mean NVML utilization in a mode's window from the driver's samples and from the rates,
    side by side from the raw samples: the run uses the first; the second cross-checks its units."""
    run = ((d.get("modes") or {}).get(mode) or {}).get("run") or {}
    lo, hi = run.get("start_ns"), run.get("end_ns")
    if lo is None or hi is None:
        return None, None
    driver, rates = [], []
    for sample in (d.get("samples") or {}).get("samples", []):
        if lo <= sample["time_ns"] <= hi and sample.get("gpus"):
            g = sample["gpus"][0]
            driver += g.get("util_samples_pct") or []
            if g.get("util_pct") is not None:
                rates.append(g["util_pct"])
    return _mean(driver), _mean(rates)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def case_row(name: str, expected: str, r: dict) -> dict:
    d = r.get("json")
    row = {"case": name, "expected": expected, "rc": r.get("rc"), "took_s": round(r.get("took_s", 0), 1)}
    if not d or not d.get("verdict"):
        row.update(verdict="(no result)", ok=False)
        return row
    v = d["verdict"]
    syn = (d.get("modes") or {}).get("synthetic") or {}
    gpu = syn.get("gpu") or {}
    gpm = gpu.get("gpm") or {}
    peak = syn.get("peak_memory") or {}
    got = v["bottleneck"] + (f"/{v['facts']['gpu_limit']}" if v.get("facts", {}).get("gpu_limit") else "")
    want_main, _, want_limit = expected.partition("/")
    ok = v["bottleneck"] == want_main and (not want_limit or v.get("facts", {}).get("gpu_limit") == want_limit)
    row.update(
        verdict=f"{got} ({v['confidence']})", ok=ok, headline=v.get("headline"),
        handover_ms=(d.get("handover") or {}).get("ms_mean"),
        synthetic_batches_per_sec=syn.get("batches_per_sec"),
        gpu_busy_pct=syn.get("gpu_util_pct"), util_source=gpu.get("util_source"),
        util_driver_vs_rates=util_both_ways(d),
        util_readings=gpu.get("util_readings"),
        sm_active_pct=gpm.get("sm_active_pct"), sm_occupancy_pct=gpm.get("sm_occupancy_pct"),
        tensor_pct=gpm.get("tensor_active_pct"), dram_bw_pct=gpm.get("dram_bw_pct"),
        fp32_pct=gpm.get("fp32_active_pct"), gpm_samples=gpm.get("samples"), gpm_reason=gpu.get("gpm_reason"),
        power_w=gpu.get("power_w_mean"),
        peak_gib=None if not peak else peak["bytes"] / 2**30, peak_source=peak.get("source"),
        input_wait_frac=((d.get("modes") or {}).get("pipeline") or {}).get("input_wait_frac"),
        fixes=[f["kind"] + (f" x{f['measured_speedup']:.2f}" if f.get("measured_speedup") else "") for f in d.get("fixes", [])],
        step_sync=(d.get("step") or {}).get("sync"),
        evidence=v.get("evidence"),
    )
    return row


def print_summary(summary: dict) -> None:
    print("\n" + "=" * 118)
    print("GPU VALIDATION SUMMARY")
    p = summary.get("probe") or {}
    print(f"probe: {', '.join(p.get('available', {})) or 'no metrics'}"
          + (f" | no GPU: {p['no_gpu_reason']}" if p.get("no_gpu_reason") else "")
          + f" | driver util samples in 1.5 s idle: {p.get('driver_util_samples_in_1.5s')}")
    if p.get("unavailable"):
        print("unavailable: " + "; ".join(f"{k}: {v}" for k, v in p["unavailable"].items()))
    t = summary.get("gpu_tests") or {}
    tail = (t.get("stdout_tail") or t.get("note") or "").strip().splitlines()
    print(f"gpu tests: rc={t.get('rc')} {tail[-1] if tail else ''}")
    head = (f"{'case':<14}{'expected':<26}{'verdict':<30}{'ok':<4}{'b/s':>8}{'busy':>6}{'src':>5}{'SM':>5}"
            f"{'occ':>5}{'tens':>5}{'DRAM':>5}{'fp32':>5}{'W':>5}{'peakGiB':>8}{'took':>6}")
    print(head)
    for row in summary["cases"]:
        src = {"driver_samples": "drv", "utilization_rates": "rate"}.get(row.get("util_source"), "—")
        print(f"{row['case']:<14}{row['expected']:<26}{row['verdict'][:29]:<30}{'yes' if row['ok'] else 'NO':<4}"
              f"{_f(row.get('synthetic_batches_per_sec'), '{:.1f}'):>8}{_f(row.get('gpu_busy_pct')):>6}{src:>5}"
              f"{_f(row.get('sm_active_pct')):>5}{_f(row.get('sm_occupancy_pct')):>5}{_f(row.get('tensor_pct')):>5}"
              f"{_f(row.get('dram_bw_pct')):>5}{_f(row.get('fp32_pct')):>5}{_f(row.get('power_w')):>5}"
              f"{_f(row.get('peak_gib'), '{:.2f}'):>8}{row['took_s']:>6}")
    for row in summary["cases"]:
        drv, rate = row.get("util_driver_vs_rates") or (None, None)
        if drv is not None or rate is not None:
            print(f"  {row['case']}: synthetic-mode NVML busy, driver samples {_f(drv, '{:.1f}')}% "
                  f"({row.get('util_readings')} readings) vs utilization rates {_f(rate, '{:.1f}')}%")
    for row in summary["cases"]:
        if row.get("headline"):
            print(f"  {row['case']}: {row['headline']} | fixes: {', '.join(row.get('fixes') or []) or 'none'}")
        if row.get("gpm_reason"):
            print(f"  {row['case']}: no GPM: {row['gpm_reason']}")
        if row.get("rc") not in (0, None):
            print(f"  {row['case']}: exit code {row['rc']} (see {row['case']}.log)")
    s = summary.get("sweep") or {}
    sj = s.get("json")
    print(f"sweep (limit {SWEEP_LIMIT_MB} MB, sizes {SWEEP_SIZES}): rc={s.get('rc')} took={_f(s.get('took_s'), '{:.0f}')}s")
    if sj:
        print(f"  {'batch':>7}{'ex/s':>12}{'±':>9}{'fed ex/s':>12}{'busy':>6}{'SM':>5}{'peakGiB':>9}  status")
        for pt in sj["points"]:
            ci = pt.get("examples_per_sec_ci")
            peak = pt.get("peak_memory")
            print(f"  {pt['batch_size']:>7}{_f(pt.get('examples_per_sec')):>12}"
                  f"{_f(None if not ci else (ci[1] - ci[0]) / 2):>9}{_f(pt.get('pipeline_examples_per_sec')):>12}"
                  f"{_f(pt.get('gpu_util_pct')):>6}{_f(pt.get('gpm_sm_active_pct')):>5}"
                  f"{_f(None if not peak else peak['bytes'] / 2**30, '{:.2f}'):>9}  {pt['status']} {pt.get('bottleneck') or ''}")
        k = sj["knee"]
        print(f"  knee: {k['batch_size']} ({'uncertain' if k['uncertain'] else 'clear'}): {k['reason']}")
        print(f"  memory: {sj['oom_edge']['text']}")
        for line in (sj.get("memory_limit") or {}).get("applied", []):
            print(f"  limit: {line}")
        for line in (sj.get("memory_limit") or {}).get("not_applied", []):
            print(f"  limit NOT applied: {line}")
    for name, o in (summary.get("overhead") or {}).items():
        oj = o.get("json")
        if not oj:
            print(f"overhead {name}: rc={o.get('rc')} (no result; see overhead_{name}.log)")
            continue
        lo, hi = oj["overhead_pct_ci95"]
        print(f"overhead {name}: {oj['overhead_pct']:+.2f}% (95% {lo:+.2f}% to {hi:+.2f}%) over {oj['rounds']} rounds of "
              f"{oj['block_s']:g}s -> {oj['verdict']}; one sample {oj['one_sample']['sample_ms_median']:.2f} ms")
    passed = sum(1 for r in summary["cases"] if r["ok"])
    print(f"verdicts as expected: {passed}/{len(summary['cases'])}; total {summary['took_s']:.0f} s; "
          f"files in {summary['out_dir']}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.environ.get("OUT") or os.path.join(ROOT, "gpu-validation-out"))
    p.add_argument("--budget-s", type=float, default=450.0, help="stop starting new runs after this (default 450)")
    p.add_argument("--max-seconds", type=float, default=3.0, help="per-mode cap of each diagnosis (default 3)")
    p.add_argument("--only", help="comma-separated subset: probe,tests,<case names>,sweep,overhead "
                   "(or overhead_host, overhead_compute)")
    args = p.parse_args(argv)
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    budget = Budget(args.budget_s)
    wanted = None if not args.only else set(args.only.split(","))

    def take(name: str) -> bool:
        return wanted is None or name in wanted

    started = time.monotonic()
    summary: dict = {"out_dir": out_dir, "cases": [], "overhead": {}}

    if take("probe"):
        try:
            summary["probe"] = probe(out_dir)
        except Exception as error:  # noqa: BLE001 - report and go on
            summary["probe"] = {"error": repr(error)}
        print(f"[probe] {json.dumps(summary['probe'].get('available', summary['probe']), default=str)[:400]}", flush=True)
    if take("tests"):
        summary["gpu_tests"] = gpu_tests(out_dir, 120)  # ~35 s on the H200; a short budget must not cut them
        print(f"[gpu tests] rc={summary['gpu_tests'].get('rc')}", flush=True)
    tf_cases = TF_CASES if (wanted and wanted & {c[0] for c in TF_CASES}) or tensorflow_sees_gpu() else []
    for name, expected, extra, timeout in CASES + tf_cases:
        if not take(name):
            continue
        if budget.left() < 60:
            summary["cases"].append({"case": name, "expected": expected, "verdict": "(skipped: time budget)", "ok": False,
                                     "took_s": 0, "rc": "skipped"})
            continue
        r = diagnose_case(name, extra, min(timeout, budget.left() - 30), out_dir, args.max_seconds)
        row = case_row(name, expected, r)
        summary["cases"].append(row)
        print(f"[{name}] rc={r['rc']} {row['verdict']} ok={row['ok']} ({r['took_s']:.0f}s)", flush=True)
    if take("sweep"):
        if budget.left() > 60:
            summary["sweep"] = sweep_case(min(150, budget.left() - 20), out_dir, 2.0)
            print(f"[sweep] rc={summary['sweep']['rc']} ({summary['sweep']['took_s']:.0f}s)", flush=True)
        else:
            summary["sweep"] = {"rc": "skipped: time budget"}
    for name, rounds in (("host", 10), ("compute", 10)):
        if take("overhead") or take(f"overhead_{name}"):
            if budget.left() < 45:
                summary["overhead"][name] = {"rc": "skipped: time budget"}
                continue
            summary["overhead"][name] = overhead_case(name, min(90, budget.left() - 10), out_dir, rounds, 1.5)
            print(f"[overhead {name}] rc={summary['overhead'][name]['rc']}", flush=True)
    summary["took_s"] = time.monotonic() - started
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    print_summary(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
