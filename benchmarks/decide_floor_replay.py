"""Would pipeline and input_only modes have decided sooner, and the same way, with a lower floor?

Replays saved diagnoses (`--json` files, e.g. an accuracy run's `--keep-json` folder or
diagnose_time's `--keep`): for every pipeline or input_only run that stopped `decided`, the mode's
own `decided` test (verdict.sequential: PipelineDecided, InputOnlyDecided, against the same
diagnosis's synthetic mode) is asked again on the run's first steps, step by step, from
`--floor` seconds of the window's wall time and the mode's least number of steps on. It reports how much sooner the first
yes came, and every reading that the early stop would have put on the other side of a line the
verdict reads (the fed step's slowdown against 1.15, and against 1 where the step waited 5% or
more; the wait's share against 5% and 20%; the input alone over the free step against 1 and 1.3)
than the whole window did. No CPU is spent on pipelines: it reads step times only.

What it cannot tell: what the later phases would have read (the modes run back to back, so a
shorter pipeline mode moves everything after it a little sooner), and runs that never stopped
`decided` (they measured on to their own rule and would again). The runner checks its condition
only when the step count has grown by an eighth, so a real stop comes at or a little after the
one found here.

    python benchmarks/decide_floor_replay.py DIR [DIR ...] --floor 0.5
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pipediag.verdict import thresholds as T  # noqa: E402
from pipediag.verdict.sequential import InputOnlyDecided, PipelineDecided, rate_reading, wait_share  # noqa: E402

MIN_STEPS = {"pipeline": 12, "input_only": 10}  # records.run.StopRule.decide_min_steps; pipeline mode's own test needs 12


def _steps(run: dict) -> list[int]:
    return [w + c for w, c in zip(run["wait_ns"], run["compute_ns"])]


def _sides(name: str, test, wait_ns: list[int], step_ns: list[int]) -> dict[str, bool]:
    """Which side of each line the verdict reads a window's readings fall on."""
    if name == "pipeline":
        gap, wait = test.gap(step_ns), wait_share(wait_ns, step_ns)
        sides = {"slowdown >= 1.15": gap.value >= T.GAP_SIGNIFICANT,
                 "wait >= 5%": wait[0] >= T.INPUT_WAIT_MODERATE, "wait >= 20%": wait[0] >= T.INPUT_WAIT_HIGH}
        if wait[2] >= T.INPUT_WAIT_MODERATE:
            sides["slowdown >= 1"] = gap.value >= 1.0
        return sides
    headroom = test.headroom(step_ns)
    return {"input alone >= 1x": headroom.value >= 1.0, "input alone >= 1.3x": headroom.value >= T.INPUT_HEADROOM}


def replay_file(path: str, floor_s: float) -> list[dict]:
    with open(path) as f:
        diagnosis = json.load(f)
    modes = diagnosis.get("modes") or {}
    synthetic = (modes.get("synthetic") or {}).get("run")
    free = rate_reading(_steps(synthetic)) if synthetic and synthetic.get("wait_ns") else None
    if free is None or free.interval is None:
        return []
    rows = []
    for name, kind in (("pipeline", PipelineDecided), ("input_only", InputOnlyDecided)):
        run = (modes.get(name) or {}).get("run")
        if not run or run.get("stop_reason") != "decided":
            continue
        wait, step = run["wait_ns"], _steps(run)
        # The runner's clock is the window's wall time, which holds the loop's own work beside the
        # steps (40% of a window of sub-millisecond reads): each step is stretched by the window's
        # wall time over its steps' sum, spread evenly.
        window_s = (run["end_ns"] - run["start_ns"]) / 1e9
        stretch = window_s / (sum(step) / 1e9) if sum(step) > 0 else 1.0
        test, elapsed_ns, stop = kind(free), 0, None
        for i, s in enumerate(step):
            elapsed_ns += s
            n = i + 1
            elapsed_s = elapsed_ns / 1e9 * stretch
            if elapsed_s >= floor_s and n >= MIN_STEPS[name] and test(wait[:n], run["compute_ns"][:n]):
                stop = (n, elapsed_s)
                break
        row = {"file": os.path.relpath(path), "mode": name, "window_s": window_s, "steps": len(step)}
        if stop is None:  # the whole window is not decided by this test: it stopped on a checkpoint the replay missed
            rows.append({**row, "early_s": None, "flips": []})
            continue
        n, early_s = stop
        whole, early = _sides(name, test, wait, step), _sides(name, test, wait[:n], step[:n])
        flips = [line for line in whole if line in early and whole[line] != early[line]]
        rows.append({**row, "early_s": early_s, "early_steps": n, "flips": flips})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dirs", nargs="+", help="folders of saved diagnoses (*.json)")
    p.add_argument("--floor", type=float, default=0.5, help="the decision's least seconds to replay (default 0.5)")
    args = p.parse_args(argv)
    total_runs = total_saved = 0.0
    flipped = []
    for d in args.dirs:
        rows = [r for f in sorted(glob.glob(os.path.join(d, "*.json"))) for r in replay_file(f, args.floor)]
        decided = [r for r in rows if r["early_s"] is not None]
        saved = sum(r["window_s"] - r["early_s"] for r in decided)
        total_runs += len(decided)
        total_saved += saved
        flipped += [r for r in decided if r["flips"]]
        print(f"{d}: {len(rows)} runs stopped decided; {len(decided)} decided again from {args.floor} s, "
              f"{saved:.1f} s sooner in all ({saved / max(1, len(decided)):.2f} s a run); "
              f"{len(rows) - len(decided)} not decided by the replay's checks")
    print(f"all: {int(total_runs)} runs, {total_saved / max(1, total_runs):.2f} s sooner a run; "
          f"{len(flipped)} with a reading on the other side of a line")
    for r in flipped:
        print(f"  {r['file']} {r['mode']}: {', '.join(r['flips'])} (after {r['early_s']:.2f} s, "
              f"{r['early_steps']} of {r['steps']} steps)")
    return 1 if flipped else 0


if __name__ == "__main__":
    sys.exit(main())
