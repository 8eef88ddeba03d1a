"""The patch benchmark: on every input-bound scenario, does `pipediag fix`'s patch apply cleanly, and
does the patched builder run as fast as the tuned mode?

    python benchmarks/patch.py                          # every input-bound CPU scenario
    python benchmarks/patch.py --only jpeg_tfrecord_serial,cheap_map_large_batch

Per scenario: `python -m pipediag diagnose ... --json` runs as a user would run it. Then a child
process patches the scenario's source with the changes that diagnosis measured as gains
(`pipediag.patch.source`, the same code as `pipediag fix`), imports the patched builder from a
hidden sibling file, checks that its graph has each promised stage, and measures it with
`pipediag.compare` against the tuned pipeline (`pipediag.tuned_pipeline` with the same diagnosis:
the tuned mode's graph rewrite), both feeding the scenario's own step in interleaved rounds. The
goal (issue 17): the patched builder within ±5% of the tuned mode, i.e. the 95% interval of
patched / tuned inside [0.95, 1.05]. A cache the patch adds is filled once before the comparison,
as the tuned mode fills its own (`pipediag.patch.prove.fill_caches`).

The control: the tuned mode's pipeline is rebuilt from its graph, the patched builder is run as
the user's Python builds it, and a rebuild alone can change a pipeline's speed. Where the patched
pipeline was not rebuilt already (to fill a cache), a second compare runs it rebuilt from its own
graph against the tuned one: the same pipeline built the same way, which the goal also reports.

The benchmark takes the CPU lock (/tmp/pipediag-cpu.lock) itself around each scenario: do not
wrap it in `flock` (that would deadlock). The table is printed and written, with the date and the
machine, to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from accuracy import (  # noqa: E402  (the benchmarks share how scenarios are found and run)
    RESULTS,
    ROOT,
    child_env,
    cpu_lock,
    describe,
    diagnose_command,
    load_scenario,
    machine,
    scenario_paths,
)

EQUIVALENCE = 0.05


def input_bound(paths: list[str]) -> list[str]:
    return [p for p in paths if load_scenario(p).EXPECTED.bottleneck == "input"]


def measure_one(path: str, run_json: str, compare_seconds: float, max_rounds: int, gains_only: bool) -> dict[str, Any]:
    """In a child process: patch, check, and compare patched (B) with tuned (A)."""
    sys.path.insert(0, ROOT)
    import pipediag
    from pipediag.analysis.compare import LookPlan
    from pipediag.builder.prepare import prepare_dataset
    from pipediag.modes.compare import FED, ComparePlan
    from pipediag.patch.prove import check_stage, fill_caches, patched_builder, stage_ops
    from pipediag.patch.source import patch_source
    from pipediag.results.diagnose import read_json
    from pipediag.tuner.selection import select_gains

    module = load_scenario(path)
    info = describe(module)
    diagnosis = read_json(run_json)
    selection = select_gains(diagnosis, gains_only)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    patch = patch_source(source, "make_dataset", list(selection.gains), path=os.path.relpath(path, ROOT),
                         stage_labels=[s.label for s in diagnosis.stages])
    out: dict[str, Any] = {
        "gains": [f"{c.kind} {c.stage or ''}".strip() for c in selection.gains],
        "left_out": [f"{c.kind} {c.stage or ''}: {c.reason}".strip() for c in selection.left_out if c.applied is False],
        "together": [selection.together_speedup, selection.together_ci],
        "edits": [{"kind": e.kind, "stage": e.stage, "done": e.done, "reason": e.reason} for e in patch.edits],
        "diff": patch.diff(),
    }
    if not patch.changed:
        out["result"] = "nothing to patch" if not selection.gains else "no edit"
        return out
    step_kwargs: dict[str, Any] = {"batch_format": info["batch_format"]}
    if info["step"] == "model":
        step_kwargs["model"] = module.make_model()
    elif info["step"] == "step":
        step_kwargs["step"] = module.make_step()
    batch_size = diagnosis.settings.get("batch_size")
    tuned = pipediag.tuned_pipeline(module.make_dataset, diagnosis, gains_only=gains_only)
    out["tuned_applied"] = [f"{c.kind} {c.stage or ''}".strip() for c in tuned.applied]
    out["tuned_check"] = tuned.check
    with patched_builder(patch) as builder:
        patched = prepare_dataset(builder, {}, batch_size, False, 0)
        threads = patched.dataset.options().threading.private_threadpool_size
        checks = [check_stage(e, list(patched.stages), threads, stage_ops(patched.graph)) for e in patch.done]
        out["stage_checks"] = [{"kind": c.kind, "stage": c.stage, "ok": c.ok, "text": c.text} for c in checks]
        dataset, fill_ns = fill_caches(patched.dataset)
        out["patched_cache_fill_ms"] = None if fill_ns is None else fill_ns / 1e6
        # A fixed number of rounds (one look at max_rounds - 1, the last at max_rounds): compare's
        # early stop on an interval that excludes 1 would end a run at, say, [1.01, 1.07], which
        # the goal's question (inside ±5%?) cannot use. Fed turns only: the goal is about the step
        # fed by each pipeline, and an input-only turn per side would halve the rounds the cap allows.
        looks = LookPlan(max_rounds=max_rounds, first_look=max_rounds - 1)
        plan = ComparePlan(looks=looks, max_seconds=compare_seconds, kinds=(FED,))
        comparison = pipediag.compare(tuned.dataset, dataset, plan=plan, equivalence=EQUIVALENCE,
                                      label_a="tuned", label_b="patched", **step_kwargs)
        # The control: the tuned mode's pipeline is rebuilt from its graph (DatasetFromGraph), the
        # patched one is built by the user's Python, and a rebuild alone can change the speed (seen:
        # from_tensor_slices(numpy).repeat().batch(1024) ran ~1.15x rebuilt, the same ops in both
        # graphs). Rebuilt the same way, patched and tuned should be one pipeline. A patched
        # pipeline with a cache was rebuilt already, to fill it (fill_caches): no control needed.
        control = None
        if fill_ns is None:
            from pipediag.builder.graph import PipelineGraph

            rebuilt = PipelineGraph.from_dataset(dataset).to_dataset()
            control = pipediag.compare(tuned.dataset, rebuilt, plan=plan, equivalence=EQUIVALENCE,
                                       label_a="tuned", label_b="patched, rebuilt from its graph", **step_kwargs)
    civ = None if control is None else control.interval
    out["rebuilt_vs_tuned"] = None if civ is None else {"ratio": civ.ratio, "low": civ.low, "high": civ.high}
    out["control_result"] = None if control is None else _result(civ)
    iv = comparison.interval
    out["patched_vs_tuned"] = None if iv is None else {"ratio": iv.ratio, "low": iv.low, "high": iv.high}
    out["verdict"] = comparison.verdict.verdict
    out["compare"] = {"rounds": len(comparison.rounds), "stop": comparison.stop_reason,
                      "segment_s": comparison.segment_seconds, "elapsed_s": comparison.elapsed_s,
                      "log_sd": None if iv is None else iv.log_sd, "level": None if iv is None else iv.level}
    out["result"] = _result(iv)
    return out


def _result(iv) -> str:
    if iv is None:
        return "inconclusive"
    if iv.low >= 1 - EQUIVALENCE and iv.high <= 1 + EQUIVALENCE:
        return "met"
    if iv.high < 1 - EQUIVALENCE or iv.low > 1 + EQUIVALENCE:
        return "miss"
    return "not settled"  # the interval straddles a ±5% edge


def run_scenario(path: str, max_seconds: float, compare_seconds: float, max_rounds: int, lock: bool,
                 gains_only: bool) -> dict[str, Any]:
    name = os.path.splitext(os.path.basename(path))[0]
    with tempfile.TemporaryDirectory(prefix="pipediag-patch-") as tmp, cpu_lock(lock):
        run_json = os.path.join(tmp, "run.json")
        info = describe(load_scenario(path))
        started = time.monotonic()
        diag = subprocess.run(diagnose_command(path, info, max_seconds, run_json), capture_output=True, text=True,
                              env=child_env(), cwd=ROOT)
        row: dict[str, Any] = {"scenario": name, "diagnose_s": round(time.monotonic() - started, 1)}
        if diag.returncode != 0 or not os.path.exists(run_json):
            row.update(result="diagnose failed", error=diag.stderr[-2000:])
            return row
        out_json = os.path.join(tmp, "out.json")
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", path, "--run", run_json,
                                "--out", out_json, "--compare-seconds", str(compare_seconds),
                                "--max-rounds", str(max_rounds)]
                               + ([] if gains_only else ["--all-applied"]),
                               capture_output=True, text=True, env=child_env(), cwd=ROOT)
        if child.returncode != 0 or not os.path.exists(out_json):
            row.update(result="patch run failed", error=child.stderr[-2000:])
            return row
        with open(out_json) as f:
            row.update(json.load(f))
        return row


def _fmt_iv(iv) -> str:
    return "—" if not iv else f"{iv['ratio']:.3f} [{iv['low']:.3f}, {iv['high']:.3f}]"


def _together(t) -> str:
    speedup, ci = t if t else (None, None)
    if speedup is None:
        return "—"
    return f"{speedup:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def _control(r) -> str:
    if r.get("rebuilt_vs_tuned"):
        return f"{_fmt_iv(r['rebuilt_vs_tuned'])}: {r['control_result']}"
    return "— (rebuilt to fill its cache)" if r.get("patched_cache_fill_ms") is not None else "—"


def _rounds(c) -> str:
    return "—" if not c else f"{c['rounds']} ({c['stop']}), {c['segment_s']:.1f} s"


def table(rows: list[dict[str, Any]], args, when: str) -> str:
    m = machine()
    lines = [f"# pipediag fix: patched builder vs tuned mode — {when}", "",
             f"Machine: {m.get('cpu_logical')} logical cores, {m.get('memory_total_gib')} GiB, {m.get('platform')}, "
             f"Python {m.get('python')}; {m.get('packages')}.", "",
             f"Command: `python benchmarks/patch.py {' '.join(args.argv)}` (the benchmark takes "
             f"/tmp/pipediag-cpu.lock around each scenario). Diagnosis: `pipediag diagnose --max-seconds "
             f"{args.max_seconds:g}`; comparison: `pipediag.compare(tuned, patched)`, feeding the scenario's step, "
             f"fed turns only, cap {args.compare_seconds:g} s and {args.max_rounds} rounds, ±{EQUIVALENCE:.0%} "
             "equivalence.", "",
             "Goal: patched / tuned within ±5% (its 95% interval inside [0.95, 1.05]).", "",
             f"| scenario | {'gains' if args.gains_only else 'changes the tuned mode applied'}, patched | "
             "edits (done / all) | stage checks | diagnosis tuned/pipeline | patched / tuned [95% CI] | rounds, "
             "turn | result | control: patched rebuilt / tuned [95% CI] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        edits = r.get("edits") or []
        checks = r.get("stage_checks") or []
        lines.append(
            f"| {r['scenario']} | {', '.join(r.get('gains') or []) or '—'} | "
            f"{sum(e['done'] for e in edits)} / {len(edits)} | "
            f"{sum(c['ok'] for c in checks)} / {len(checks)} ok | {_together(r.get('together'))} | "
            f"{_fmt_iv(r.get('patched_vs_tuned'))} | {_rounds(r.get('compare'))} | {r.get('result')} | "
            f"{_control(r)} |")
    met = sum(r.get("result") == "met" for r in rows)
    either = sum(r.get("result") == "met" or r.get("control_result") == "met" for r in rows)
    lines += ["", f"Goal met in **{met} of {len(rows)}** scenarios as the user runs the patched builder; "
              f"in {either} of {len(rows)} with the control (the patched pipeline rebuilt from its graph, "
              "as the tuned mode's is) counted.", ""]
    for r in rows:
        refused = [e for e in r.get("edits") or [] if not e["done"]]
        if refused or r.get("error") or r.get("diff"):
            lines.append(f"## {r['scenario']}")
            for e in refused:
                lines.append(f"- not edited: {e['kind']} {e['stage'] or ''}: {e['reason']}")
            for text in r.get("left_out") or []:
                lines.append(f"- left out: {text}")
            if r.get("diff"):
                lines += ["", "```diff", r["diff"].rstrip("\n"), "```"]
            if r.get("error"):
                lines += ["", "```", r["error"].strip()[-1500:], "```"]
            lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated scenario names")
    p.add_argument("--max-seconds", type=float, default=10.0, help="diagnose --max-seconds (default: 10)")
    p.add_argument("--compare-seconds", type=float, default=240.0, help="compare's cap (default: 240)")
    p.add_argument("--max-rounds", type=int, default=100,
                   help="compare's rounds (default: 100), looked at once at the end (and one round before)")
    p.add_argument("--gains-only", action="store_true",
                   help="patch only the changes measured as gains (default: every change the tuned mode applied, "
                   "so that patched and tuned are the same pipeline and every edit kind is exercised)")
    p.add_argument("--all-applied", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-lock", action="store_true", help="do not take the CPU lock")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--run", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.one:
        result = measure_one(args.one, args.run, args.compare_seconds, args.max_rounds, gains_only=not args.all_applied)
        with open(args.out, "w") as f:
            json.dump(result, f)
        return 0
    paths = input_bound(scenario_paths(only=args.only.split(",") if args.only else None))
    rows: list[dict[str, Any]] = []
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d-%H%M")
    os.makedirs(RESULTS, exist_ok=True)
    base = os.path.join(RESULTS, f"patch-cpu-{when}")
    info = machine()
    for i, path in enumerate(paths):
        row = run_scenario(path, args.max_seconds, args.compare_seconds, args.max_rounds, not args.no_lock,
                           args.gains_only)
        print(f"{row['scenario']}: {row.get('result')} {_fmt_iv(row.get('patched_vs_tuned'))}", flush=True)
        rows.append(row)
        # Written after every scenario, so an interrupted run keeps what it measured.
        text = table(rows, args, when)
        if i + 1 < len(paths):
            text += f"\n(partial: {i + 1} of {len(paths)} scenarios so far)\n"
        with open(base + ".md", "w") as f:
            f.write(text)
        with open(base + ".json", "w") as f:
            json.dump({"machine": info, "args": args.argv, "rows": rows}, f, indent=1)
    print(table(rows, args, when))
    return 0


if __name__ == "__main__":
    sys.exit(main())
