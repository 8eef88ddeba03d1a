"""A batch-size sweep in plain numbers: where throughput stops growing (the knee), and where
memory runs out (the OOM edge).

The knee, precisely. Between two measured batch sizes b1 < b2 with throughputs r1, r2 (examples
per second of the step with free input), the gain *per doubling* is

    g = (r2 / r1) ** (1 / log2(b2 / b1))

so sweeps with uneven steps (16, 32, 128) compare fairly: a step whose cost is all per-step
overhead gains 2.0 per doubling (throughput grows with the batch), one whose GPU is saturated
gains 1.0. The knee is the smallest measured batch size from which *every* later gain is below
`KNEE_GAIN_PER_DOUBLING` (1.10): from there on, doubling the batch buys less than 10% more
examples per second. Why 10%: doubling the batch doubles the activation memory and changes the
optimisation (learning rate, generalisation), a price worth paying for large gains and not for
small ones; and 10% is twice the ±5% to which a mode pins its median, so a gain that small is
near the noise anyway. "Every later gain" rather than "the first small gain" keeps one noisy
plateau from hiding growth further on. Each gain carries an interval from the two rates'
intervals; when an interval straddles the line, the knee is marked uncertain.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from pipediag.records.record import DictRecord

KNEE_GAIN_PER_DOUBLING = 1.10


@dataclass(frozen=True)
class Gain:
    from_batch: int
    to_batch: int
    per_doubling: float
    low: float | None  # 95% interval, from the two rates' intervals
    high: float | None

    @property
    def growing(self) -> bool:
        return self.per_doubling >= KNEE_GAIN_PER_DOUBLING

    @property
    def uncertain(self) -> bool:
        return self.low is not None and self.high is not None and self.low < KNEE_GAIN_PER_DOUBLING <= self.high


@dataclass(frozen=True)
class Knee:
    batch_size: int | None  # None: no knee within the sweep
    examples_per_sec: float | None
    uncertain: bool
    reason: str
    gains: tuple[Gain, ...]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gains"] = [asdict(g) for g in self.gains]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Knee:
        return cls(**{**d, "gains": tuple(Gain(**g) for g in d["gains"])})


@dataclass(frozen=True)
class Rate:
    """One measured batch size: examples per second and its 95% interval."""

    batch_size: int
    examples_per_sec: float
    ci: tuple[float, float] | None


def per_doubling(a: Rate, b: Rate) -> Gain:
    doublings = math.log2(b.batch_size / a.batch_size)
    value = (b.examples_per_sec / a.examples_per_sec) ** (1 / doublings)
    low = high = None
    if a.ci and b.ci and a.ci[0] > 0 and a.ci[1] > 0:
        low = (b.ci[0] / a.ci[1]) ** (1 / doublings)
        high = (b.ci[1] / a.ci[0]) ** (1 / doublings)
    return Gain(a.batch_size, b.batch_size, value, low, high)


def find_knee(rates: list[Rate]) -> Knee:
    """`rates`: the batch sizes that ran, in any order (out-of-memory ones left out)."""
    rates = sorted(rates, key=lambda r: r.batch_size)
    if len(rates) < 2:
        return Knee(None, None, False, "fewer than two batch sizes ran: no knee can be found", ())
    gains = tuple(per_doubling(a, b) for a, b in zip(rates, rates[1:]))
    line = f"{KNEE_GAIN_PER_DOUBLING:.2f}x per doubling"
    if gains[-1].growing:
        return Knee(None, None, gains[-1].uncertain,
                    f"throughput still grows at the largest batch size that ran ({rates[-1].batch_size}: "
                    f"{gains[-1].per_doubling:.2f}x per doubling from {gains[-1].from_batch}); try larger ones",
                    gains)
    # The knee: the first batch size after the last growing step (every gain after it is flat).
    last_growing = max((i for i, g in enumerate(gains) if g.growing), default=-1)
    knee = rates[last_growing + 1]
    uncertain = any(g.uncertain for g in gains[max(0, last_growing):])
    if last_growing < 0:
        reason = (f"no doubling gained {line} even from the smallest batch size: the step is already "
                  f"saturated at {knee.batch_size} (or something else limits it)")
    else:
        g = gains[last_growing]
        reason = (f"up to {knee.batch_size} each doubling gained >= {line} (last {g.per_doubling:.2f}x from "
                  f"{g.from_batch}); beyond it every doubling gained less")
    return Knee(knee.batch_size, knee.examples_per_sec, uncertain, reason, gains)


@dataclass(frozen=True)
class OomEdge(DictRecord):
    largest_fitting: int | None  # the largest batch size that ran
    smallest_oom: int | None  # the smallest that ran out of memory
    text: str


def oom_edge(ran: list[int], out_of_memory: list[int], peak_bytes: dict[int, int], limit_text: str = "") -> OomEdge:
    """Where memory runs out. `peak_bytes`: the peak device memory of the batch sizes that ran."""
    fitting = max(ran) if ran else None
    oom = min(out_of_memory) if out_of_memory else None
    where = f" ({limit_text})" if limit_text else ""
    if oom is None:
        peak = peak_bytes.get(fitting) if fitting is not None else None
        at = f", peaking at {peak / 2**30:.2f} GiB" if peak is not None else ""
        return OomEdge(fitting, None, f"no batch size ran out of memory{where}; the largest, {fitting}, ran{at}")
    if fitting is None or fitting > oom:
        smaller = [b for b in ran if b < oom]
        fitting = max(smaller) if smaller else None
    if fitting is None:
        return OomEdge(None, oom, f"even the smallest batch size, {oom}, ran out of memory{where}")
    peak = peak_bytes.get(fitting)
    at = f" (peak {peak / 2**30:.2f} GiB)" if peak is not None else ""
    return OomEdge(fitting, oom, f"fits at {fitting}{at}, runs out of memory at {oom}{where}")
