"""Simulated interleaved rounds, to check the comparison statistics where the truth is known.

A shared machine does not give independent timings: its speed drifts (other jobs, caches,
clocks, heat), with bursts when a neighbour wakes up. Here the machine's log speed is an AR(1)
process over segments, plus an optional steady trend, bursts, and per-segment noise (normal or
heavy-tailed). Rounds are laid out as the real runner lays them out (two fed segments, then two
input-only ones, order alternating AB, BA), and fed into the same `Sequential` object the runner
uses. Used by tests/analysis/test_compare.py and benchmarks/compare_stats.py; shipped in the
package like the scripted NVML, so users can check the method too.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pipediag.analysis.compare import LookPlan, RatioInterval, Sequential, round_order


@dataclass(frozen=True)
class Noise:
    segment_sd: float = 0.03  # log-scale noise of one segment's mean rate
    drift_sd: float = 0.0  # stationary SD of the machine's log speed
    drift_phi: float = 0.9  # AR(1) coefficient from one segment to the next
    trend_per_segment: float = 0.0  # steady change of log speed per segment
    burst_prob: float = 0.0  # chance that a segment is slowed by a neighbour
    burst_low: float = 0.1  # a burst slows the segment by a uniform fraction in [low, high]
    burst_high: float = 0.4
    tail_df: float | None = None  # segment noise from Student's t with this dof (heavy tails)


# The scenarios the tests and the statistics benchmark run. "noisy" is sized after what one
# constant step showed on the 2-core development machine: 1-second means alternating between
# 9.5 and 11.3 ms (about ±8%), i.e. a drifting speed with a few percent of noise on top.
SCENARIOS: dict[str, Noise] = {
    "quiet": Noise(segment_sd=0.02),
    "noisy": Noise(segment_sd=0.04, drift_sd=0.08, drift_phi=0.9, burst_prob=0.05),
    "drifting": Noise(segment_sd=0.03, drift_sd=0.15, drift_phi=0.98, trend_per_segment=-0.004),
    "bursty": Noise(segment_sd=0.03, drift_sd=0.05, drift_phi=0.8, burst_prob=0.15, tail_df=3.0),
}


class Machine:
    """The simulated machine's speed factor, one step per segment."""

    def __init__(self, noise: Noise, rng: random.Random):
        self.noise = noise
        self.rng = rng
        self.level = rng.gauss(0.0, noise.drift_sd) if noise.drift_sd else 0.0
        self.t = 0

    def _white(self) -> float:
        n = self.noise
        if n.tail_df is None:
            return self.rng.gauss(0.0, n.segment_sd)
        # Student's t scaled to the same SD: normal / sqrt(chi2 / df).
        chi2 = self.rng.gammavariate(n.tail_df / 2.0, 2.0)
        scale = math.sqrt((n.tail_df - 2.0) / n.tail_df) if n.tail_df > 2 else 1.0
        return self.rng.gauss(0.0, n.segment_sd) / math.sqrt(chi2 / n.tail_df) * scale

    def segment(self, true_rate: float) -> float:
        n = self.noise
        if n.drift_sd:
            innovation = n.drift_sd * math.sqrt(1.0 - n.drift_phi ** 2)
            self.level = n.drift_phi * self.level + self.rng.gauss(0.0, innovation)
        log_speed = self.level + n.trend_per_segment * self.t + self._white()
        if n.burst_prob and self.rng.random() < n.burst_prob:
            log_speed += math.log(1.0 - self.rng.uniform(n.burst_low, n.burst_high))
        self.t += 1
        return true_rate * math.exp(log_speed)


def rounds(ratio: float, noise: Noise, rng: random.Random, base_rate: float = 100.0) -> Iterator[tuple[float, float]]:
    """Endless (rate_A, rate_B) fed rounds; each round also spends two input-only segments."""
    machine = Machine(noise, rng)
    true = {"A": base_rate, "B": base_rate * ratio}
    index = 0
    while True:
        first, second = round_order(index)
        fed = {first: machine.segment(true[first]), second: machine.segment(true[second])}
        machine.segment(1.0)  # the input-only segments take time too: the machine drifts on
        machine.segment(1.0)
        yield fed["A"], fed["B"]
        index += 1


@dataclass(frozen=True)
class Outcome:
    stop_reason: str
    interval: RatioInterval | None


def simulate(ratio: float, noise: Noise, plan: LookPlan, clear: Callable[[RatioInterval], bool],
             rng: random.Random) -> Outcome:
    """One whole comparison on simulated rounds, stopped exactly as the real runner stops."""
    sequential = Sequential(plan, clear)
    for a, b in rounds(ratio, noise, rng):
        reason = sequential.add(a, b)
        if reason is not None:
            return Outcome(reason, sequential.conclude())
    raise AssertionError("unreachable: the round cap always stops")  # pragma: no cover


def claim_rate(ratio: float, noise: Noise, plan: LookPlan, clear: Callable[[RatioInterval], bool], runs: int,
               seed: int) -> tuple[float, float]:
    """Over `runs` simulated comparisons: the share that claimed a difference (interval excludes
    1), and the mean number of rounds they took."""
    rng = random.Random(seed)
    claims = rounds_total = 0
    for _ in range(runs):
        outcome = simulate(ratio, noise, plan, clear, rng)
        claims += outcome.interval is not None and outcome.interval.excludes_one
        rounds_total += outcome.interval.rounds if outcome.interval else 0
    return claims / runs, rounds_total / runs
