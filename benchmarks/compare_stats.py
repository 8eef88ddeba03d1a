"""How often `compare` claims a difference, on simulated rounds where the truth is known.

Pure simulation (no TensorFlow, no timing): the same `Sequential` object and stopping rule the
real runner uses, fed with rounds from `pipediag.analysis.simulation` (a machine whose speed
drifts, with bursts and heavy tails). For each noise scenario it reports:

- false claims: the share of comparisons of identical sides that claimed a difference;
- power: the share that detected a real change of ±5% and ±10% (in the right direction);
- rounds: the mean number of rounds a comparison took;
- and, for the choice of method, what two alternatives would have done on the same kind of data:
  looking at every look with a plain 95% interval (no adjustment), and a percentile bootstrap
  over rounds at a fixed small number of rounds.

    python benchmarks/compare_stats.py [--runs 2000] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import platform
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from pipediag.analysis.compare import LookPlan, paired_ratio  # noqa: E402
from pipediag.analysis.simulation import SCENARIOS, claim_rate, rounds, simulate  # noqa: E402
from pipediag.verdict.compare import is_clear  # noqa: E402


def clear(iv):
    return is_clear(iv, equivalence=0.05)


def directional_power(ratio: float, scenario: str, runs: int, seed: int) -> float:
    rng = random.Random(seed)
    hits = 0
    for _ in range(runs):
        iv = simulate(ratio, SCENARIOS[scenario], LookPlan(), clear, rng).interval
        hits += iv is not None and (iv.low > 1.0 if ratio > 1 else iv.high < 1.0)
    return hits / runs


def naive_peeking(scenario: str, runs: int, seed: int) -> float:
    """Plain 95% intervals at each planned look, stopping at the first that excludes 1."""
    plan = LookPlan()
    rng = random.Random(seed)
    claims = 0
    for _ in range(runs):
        a, b = [], []
        for x, y in rounds(1.0, SCENARIOS[scenario], rng):
            a.append(x)
            b.append(y)
            if len(a) in plan.looks():
                iv = paired_ratio(a, b, 0.95)
                if iv.excludes_one or len(a) == plan.max_rounds:
                    claims += iv.excludes_one
                    break
    return claims / runs


def fixed_n_coverage(scenario: str, n: int, runs: int, seed: int) -> tuple[float, float]:
    """Coverage of the true ratio (1.0) by a 95% interval from n rounds: Student's t on the
    log ratios vs a percentile bootstrap of their mean (2000 resamples)."""
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    t_cover = boot_cover = 0
    for _ in range(runs):
        gen = rounds(1.0, SCENARIOS[scenario], rng)
        pairs = [next(gen) for _ in range(n)]
        a, b = [p[0] for p in pairs], [p[1] for p in pairs]
        iv = paired_ratio(a, b, 0.95)
        t_cover += iv.low <= 1.0 <= iv.high
        d = np.log(np.array(b) / np.array(a))
        means = d[nprng.integers(0, n, size=(2000, n))].mean(axis=1)
        lo, hi = np.percentile(means, [2.5, 97.5])
        boot_cover += lo <= 0.0 <= hi
    return t_cover / runs, boot_cover / runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results",
                                                      f"compare_stats-{dt.date.today().isoformat()}.md"))
    args = parser.parse_args()
    runs = args.runs
    se = math.sqrt(0.05 * 0.95 / runs)
    plan = LookPlan()
    lines = [
        f"# compare: statistics on simulated rounds — {dt.datetime.now().isoformat(timespec='minutes')}", "",
        f"Simulation only (no timing), so the machine does not matter; run with Python {platform.python_version()} "
        f"on {platform.machine()}. Command: `python benchmarks/compare_stats.py --runs {runs}`.",
        f"Default plan: looks at {', '.join(map(str, plan.looks()))} rounds, each at {100 * plan.level:.2f}% "
        "(Bonferroni over the looks), early stop when the interval excludes 1 or lies within ±5%.",
        f"{runs} simulated comparisons per cell; a rate's standard error is about {100 * se:.1f} points at 5%.", "",
        "Scenarios (pipediag/analysis/simulation.py): " + "; ".join(
            f"`{name}`: {', '.join(f'{k}={v}' for k, v in vars(n).items() if v not in (0, 0.0, None))}"
            for name, n in SCENARIOS.items()), "",
        "| scenario | false claims (A = B) | mean rounds (A = B) | power +5% | power −5% | power +10% | power −10% "
        "| mean rounds (+10%) | false claims, unadjusted looks |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, name in enumerate(SCENARIOS):
        noise = SCENARIOS[name]
        false, rounds_null = claim_rate(1.0, noise, plan, clear, runs, seed=100 + i)
        powers = [directional_power(r, name, runs, seed=200 + 10 * i + j)
                  for j, r in enumerate((1.05, 1 / 1.05, 1.10, 1 / 1.10))]
        _, rounds_10 = claim_rate(1.10, noise, plan, clear, runs, seed=300 + i)
        naive = naive_peeking(name, runs, seed=400 + i)
        lines.append(f"| {name} | {100 * false:.1f}% | {rounds_null:.1f} | " +
                     " | ".join(f"{100 * p:.1f}%" for p in powers) + f" | {rounds_10:.1f} | {100 * naive:.1f}% |")
        print(lines[-1], flush=True)
    lines += ["", "Coverage of a 95% interval from a fixed number of rounds (A = B, `noisy` scenario): Student's t on "
              "the per-round log ratios vs a percentile bootstrap over rounds.", "",
              "| rounds | t interval | percentile bootstrap |", "|---|---|---|"]
    for n in (4, 6, 9, 14, 30):
        t_cov, boot_cov = fixed_n_coverage("noisy", n, runs, seed=500 + n)
        lines.append(f"| {n} | {100 * t_cov:.1f}% | {100 * boot_cov:.1f}% |")
        print(lines[-1], flush=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
