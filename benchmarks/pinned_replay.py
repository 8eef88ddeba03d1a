"""Where synthetic mode's pinned-rate stop would have ended saved runs, and whether the verdicts change.

Synthetic mode may stop from PINNED_MIN_SECONDS on once its rate is pinned down
(pipediag.modes.runner.is_pinned) instead of at its 2-s minimum. This replays that rule, noise-free,
on diagnoses saved as JSON (`benchmarks/accuracy.py --keep-json DIR`) by runs made without it:
for each saved synthetic run it walks the step times at the runner's checkpoints (every eighth
more steps, from the rule's min_steps on), finds where the rule would have stopped, and gives the
rate there against the whole window's. Then it cuts each run there and replays every diagnosis,
cut and uncut, through the current analysis, verdict and fixes (benchmarks/verdict_replay.py):
the bottleneck, confidence and fixes must be the same. What this cannot replay: pipeline and
input_only modes compared as they ran with the longer synthetic run (their sequential stops), and
the checks that measure a reading again; a fresh accuracy run covers those.

    python benchmarks/pinned_replay.py /tmp/acc/r39/json /tmp/acc/r40/json --results benchmarks/results
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from verdict_replay import _imports, replay  # noqa: E402

from pipediag.modes.runner import PINNED_MIN_SECONDS, is_pinned  # noqa: E402
from pipediag.records.run import StopRule  # noqa: E402


def pinned_stop(step_ns: list[int], rule: StopRule) -> int | None:
    """How many steps the pinned-rate stop would have kept (None: it would not have stopped before
    `rule.min_seconds`), at the runner's checkpoints; time is the steps' own time, as the window's."""
    last_check, elapsed_ns = 0, 0
    for i, ns in enumerate(step_ns):
        elapsed_ns += ns
        n = i + 1
        if elapsed_ns / 1e9 >= rule.min_seconds:
            return None
        grown = n >= last_check * 1.125 or n == rule.min_steps
        if n >= rule.min_steps and elapsed_ns / 1e9 >= PINNED_MIN_SECONDS and grown:
            last_check = n
            if is_pinned(step_ns[:n], rule.rel_half_width, rule.mean_rel_half_width):
                return n
    return None


def cut(data: dict, n: int) -> dict:
    """The saved diagnosis with synthetic mode's run ending after its first `n` timed steps."""
    run = data["modes"]["synthetic"]["run"]
    steps = [w + c for w, c in zip(run["wait_ns"], run["compute_ns"])]
    run["end_ns"] = run["start_ns"] + sum(steps[:n])
    for key in ("wait_ns", "compute_ns", "fetch_ns", "block_ns"):
        if run.get(key):
            run[key] = run[key][:n]
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="+", help="folders of saved diagnosis JSON files (one accuracy run each)")
    parser.add_argument("--results", help="write the Markdown table into this folder")
    args = parser.parse_args(argv)
    rule, api = StopRule(), _imports()
    rows, changed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for folder in args.dirs:
            for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
                with open(path) as f:
                    data = json.load(f)
                if data.get("kind") not in (None, "diagnosis") or "synthetic" not in data.get("modes", {}):
                    continue
                run = data["modes"]["synthetic"]["run"]
                steps = [w + c for w, c in zip(run["wait_ns"], run["compute_ns"])]
                if not steps:
                    continue
                n = pinned_stop(steps, rule)
                row = {"run": os.path.basename(os.path.dirname(os.path.abspath(folder))) or folder,
                       "scenario": os.path.basename(path)[:-5], "steps": len(steps), "seconds": sum(steps) / 1e9}
                if n is not None:
                    whole, early = len(steps) / sum(steps), n / sum(steps[:n])
                    row.update(stop_steps=n, stop_seconds=sum(steps[:n]) / 1e9, rate_change=early / whole - 1)
                    out = os.path.join(tmp, f"{len(rows)}.json")
                    with open(out, "w") as f:
                        json.dump(cut(data, n), f)
                    before, after = replay(path, api), replay(out, api)

                    def said(r):
                        v = r["verdict"] or {}
                        return v.get("bottleneck"), v.get("confidence"), r.get("fixes")

                    row["same_verdict"] = said(before) == said(after)
                    if not row["same_verdict"]:
                        changed.append((row, said(before), said(after)))
                rows.append(row)
    early = [r for r in rows if "stop_steps" in r]
    changes = [r["rate_change"] for r in early]
    saved_s = sum(r["seconds"] - r["stop_seconds"] for r in early)
    lines = [
        "# Synthetic mode's pinned-rate stop, replayed on saved runs",
        "",
        f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='minutes')}",
        f"- command: `python benchmarks/pinned_replay.py {' '.join(args.dirs)}`",
        f"- rule: from {PINNED_MIN_SECONDS:g} s (before the {rule.min_seconds:g}-s minimum), stop once "
        "modes.runner.is_pinned holds at a checkpoint",
        f"- **{len(early)} of {len(rows)} synthetic runs would have stopped early**, "
        f"{saved_s:.1f} s of synthetic mode saved in all ({saved_s / max(len(args.dirs), 1):.1f} s per folder)",
    ]
    if changes:
        lines.append(f"- rate where it stopped against the whole window's: median {statistics.median(changes):+.2%}, "
                     f"from {min(changes):+.2%} to {max(changes):+.2%}")
    lines.append(f"- replayed verdicts (bottleneck, confidence, fixes) the same: "
                 f"{sum(1 for r in early if r['same_verdict'])} of {len(early)} cut runs")
    lines += ["", "| run | scenario | steps | s | stopped at (steps, s) | rate there vs whole | same verdict |",
              "|---|---|---:|---:|---|---:|---|"]
    for r in rows:
        at = f"{r['stop_steps']}, {r['stop_seconds']:.2f}" if "stop_steps" in r else "—"
        change = f"{r['rate_change']:+.2%}" if "stop_steps" in r else "—"
        same = ("yes" if r["same_verdict"] else "**no**") if "stop_steps" in r else "—"
        lines.append(f"| {r['run']} | {r['scenario']} | {r['steps']} | {r['seconds']:.2f} | {at} | {change} | {same} |")
    for row, before, after in changed:
        lines.append(f"\nchanged: {row['run']}/{row['scenario']}: {before} -> {after}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.results:
        name = f"pinned_replay_{dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d-%H%M')}.md"
        with open(os.path.join(args.results, name), "w") as f:
            f.write(text)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
