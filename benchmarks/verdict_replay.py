"""Replay saved diagnoses through the current analysis, verdict, fixes and reports — no timing.

A restructuring must not change behaviour. The accuracy benchmark checks that on fresh runs, but
fresh runs are noisy: a verdict near a threshold can flip between two runs of the *same* code. This
replay is the noise-free half of the check: it takes diagnoses saved as JSON (their raw per-step
timings and every CPU/GPU sample) and recomputes, with the code in this tree, what the modes'
numbers say — per-mode summaries, the verdict with its evidence, the fixes — and renders the
terminal and HTML reports of each saved result. Run it before and after a change and compare:

    python benchmarks/verdict_replay.py DIR_OR_FILES... --out before.jsonl
    # ... restructure ...
    python benchmarks/verdict_replay.py DIR_OR_FILES... --out after.jsonl --against before.jsonl

`--against` prints every line that differs and exits 1 if any does. The saved tuned-mode outcome
(the ablation) is taken as it was measured; everything after the measurements is recomputed.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import io
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _imports():
    """The pipediag functions the replay calls. A restructuring updates these imports, nothing else."""
    from pipediag.analysis.modes import summarize
    from pipediag.fixes.conclude import conclude
    from pipediag.report.html.diagnose import render_html
    from pipediag.report.terminal.diagnose import render_diagnosis as render
    from pipediag.results.diagnose import Diagnosis
    from pipediag.steps.placement import accelerators

    return dict(summarize=summarize, Diagnosis=Diagnosis, conclude=conclude, render_html=render_html, render=render,
                accelerators=accelerators)


def replay(path: str, api: dict) -> dict:
    """What the current code concludes from one saved diagnosis's measurements."""
    with open(path) as f:
        data = json.load(f)
    diag = api["Diagnosis"].from_dict(data)
    log = diag.samples
    summaries = {name: api["summarize"](run, log) for name, run in diag.runs.items()}
    row: dict = {"file": os.path.basename(path), "status": diag.status}
    row["modes"] = {name: _rounded(summary) for name, summary in sorted(summaries.items())}
    if "synthetic" not in summaries:
        row["verdict"] = None
        return row
    environment = diag.environment
    # The same chain of rules diagnose() runs (fixes.conclude), on the saved measurements. The
    # saved run keeps the changes the tuned mode applied, not how many it planned: those stand in.
    conclusion = api["conclude"](
        summaries, status_complete=diag.status == "complete", status=diag.status, stages=diag.stages,
        tuning=diag.tuning, ablation=diag.ablation, candidates=sum(1 for c in diag.tuning if c.applied),
        handover=diag.handover, container=log.container, gpus_present=bool(environment and environment.gpus),
        tf_gpu_without_memory_growth=bool(environment and environment.tf_gpu_without_memory_growth),
        ram_budget_bytes=diag.settings.get("ram_budget_bytes"),
        step_accelerators=api["accelerators"](diag.step.devices) if diag.step is not None else (),
        framework=diag.step.framework if diag.step is not None else None,
        slow_stage=None if diag.anatomy is None else diag.anatomy.bottleneck_stage,
        # only when saved: a tree from before handover_missing (step_xla, step_eager) existed replays the rest unchanged
        **({"handover_missing": diag.handover_missing} if getattr(diag, "handover_missing", None) else {}),
        **({"step_xla": diag.step.xla} if getattr(diag.step, "xla", None) is not None else {}),
        **({"step_eager": diag.step.eager} if getattr(diag.step, "eager", None) is not None else {}))
    verdict, recommendation = conclusion.verdict, conclusion.recommendation
    row["verdict"] = {"bottleneck": verdict.bottleneck, "confidence": verdict.confidence,
                      "headline": verdict.headline, "evidence": list(verdict.evidence)}
    row["fixes"] = [[fix.kind, fix.stage, fix.title] for fix in recommendation.fixes]
    row["withheld"] = list(recommendation.withheld)
    row["terminal_sha"] = _terminal_sha(diag, api)
    row["html_sha"] = hashlib.sha256(api["render_html"](diag).encode()).hexdigest()[:16]
    return row


def _rounded(summary) -> dict:
    keep = ("batches_per_sec", "steps", "input_wait_frac", "gpu_util_pct", "cpu_pct")
    return {k: (round(v, 6) if isinstance(v, float) else v)
            for k in keep if (v := getattr(summary, k, None)) is not None}


def _terminal_sha(diag, api) -> str:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=120, color_system=None, force_terminal=False)
    console.print(api["render"](diag))
    return hashlib.sha256(console.file.getvalue().encode()).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="saved diagnosis JSON files, or folders of them")
    parser.add_argument("--out", required=True, help="where to write one JSON line per diagnosis")
    parser.add_argument("--against", help="an earlier --out: print what differs, exit 1 if anything does")
    args = parser.parse_args(argv)
    files = []
    for p in args.paths:
        files += sorted(glob.glob(os.path.join(p, "*.json"))) if os.path.isdir(p) else [p]
    api = _imports()
    rows = []
    for path in files:
        with open(path) as f:
            kind = json.load(f).get("kind")
        if kind not in (None, "diagnosis"):
            continue
        rows.append(replay(path, api))
    with open(args.out, "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    print(f"replayed {len(rows)} saved diagnoses into {args.out}")
    if not args.against:
        return 0
    with open(args.against) as f:
        before = {json.loads(line)["file"]: line.strip() for line in f}
    differ = 0
    for row in rows:
        line = json.dumps(row, sort_keys=True)
        if before.get(row["file"]) != line:
            differ += 1
            print(f"DIFFERS: {row['file']}\n  before: {before.get(row['file'], '(absent)')[:600]}\n  after:  {line[:600]}")
    print(f"{len(rows) - differ} of {len(rows)} the same as {args.against}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
