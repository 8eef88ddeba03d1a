"""Two speeds in one mode's window: a step that ran at one speed for stretches of seconds and at
another for the rest, rather than at one speed with noise around it.

Seen on the 2-core development machine (2026-12-04): real/kerasio_timeseries' LSTM step, with
constant input and nothing else running, switched between 22-ms and 36-ms stretches within one
synthetic window (quarters 26.0, 35.4, 27.9, 36.6 ms), and other scenarios' steps switched too
(models_nlp_bert_pretrain: 67 and 92 ms). The window's median then comes from whichever speed held
more of it, and a free step whose median fell in its slow stretches looks no faster than the fed
one. This module finds such a window; the verdict decides what it changes (verdict.rules).

The window is cut into consecutive blocks; each block's median is one reading (a stretch of a
few steps, so a single slow step does not make a block slow). The blocks are split in two by
speed where the split separates them best, measured by Ashman's D on the log of the block medians
(the distance between the two groups' means over their pooled spread; D > 2 is the usual mark of
two clean groups; MIN_SEPARATION asks more, since the best of many splits is taken). Drift, a step
speeding up or slowing down steadily, spreads the block medians evenly and gives no clean split.
Pure numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pipediag import stats

BLOCKS = 20  # the window is cut into about this many blocks
MIN_BLOCK_STEPS = 5  # a block holds at least this many steps
MIN_BLOCKS = 8  # fewer blocks than this: too short a window to tell speeds apart
MIN_SIDE_SHARE = 0.10  # each speed holds at least this share of the blocks, and at least two
MIN_SEPARATION = 4.0  # Ashman's D of the two groups of block medians (log scale)
# The slow speed is at least this much slower than the fast one. The verdict's own line for a
# slower step (verdict.thresholds.GAP_SIGNIFICANT): a smaller change is within what it ignores.
MIN_RATIO = 1.15
SPREAD_FLOOR = 1e-6  # the pooled variance of log block medians, at least (0.1% apart)


@dataclass(frozen=True)
class Regimes:
    """A window whose steps ran at two speeds, in stretches."""

    fast_ms: float  # the median step time within the fast stretches
    slow_ms: float  # and within the slow ones
    fast_share: float  # the share of the window's steps in its fast stretches
    fast_per_sec: float  # steps per second over the fast stretches alone
    stretches: int  # how many stretches of one speed the window had (1 + the switches)
    separation: float  # Ashman's D of the split

    @property
    def ratio(self) -> float:
        return self.slow_ms / self.fast_ms

    @property
    def median_in_slow(self) -> bool:
        """The window's median comes from its slow stretches: they held most of its steps."""
        return self.fast_share < 0.5

    def text(self) -> str:
        return (f"{self.fast_ms:.2f} ms per step for {self.fast_share * 100:.0f}% of its steps and "
                f"{self.slow_ms:.2f} ms ({self.ratio:.2f}x slower) for the rest, in {self.stretches} stretches")


def _spread(values: Sequence[float]) -> float:
    m = stats.mean(values)
    return sum((v - m) ** 2 for v in values) / len(values)


def _separation(fast: Sequence[float], slow: Sequence[float]) -> float:
    # Block medians within 0.1% of each other count as that far apart: identical times (a fake
    # clock, a step timed to the microsecond) are not infinitely separated, and D stays finite.
    spread = max(_spread(fast) + _spread(slow), SPREAD_FLOOR)
    return math.sqrt(2.0) * (stats.mean(slow) - stats.mean(fast)) / math.sqrt(spread)


def find_regimes(step_ns: Sequence[int]) -> Regimes | None:
    """The window's two speeds, or None when it ran at one (or is too short to tell)."""
    size = max(MIN_BLOCK_STEPS, len(step_ns) // BLOCKS)
    blocks = [step_ns[i:i + size] for i in range(0, len(step_ns) - size + 1, size)]
    if len(blocks) < MIN_BLOCKS:
        return None
    logs = [math.log(max(stats.median(b), 1.0)) for b in blocks]
    order = sorted(range(len(blocks)), key=logs.__getitem__)
    least = max(2, math.ceil(MIN_SIDE_SHARE * len(blocks)))
    best: tuple[float, int] | None = None
    for k in range(least, len(blocks) - least + 1):
        d = _separation([logs[i] for i in order[:k]], [logs[i] for i in order[k:]])
        if best is None or d > best[0]:
            best = (d, k)
    if best is None or best[0] < MIN_SEPARATION:
        return None
    separation, k = best
    fast_blocks = set(order[:k])
    fast = [ns for i in sorted(fast_blocks) for ns in blocks[i]]
    slow = [ns for i in range(len(blocks)) if i not in fast_blocks for ns in blocks[i]]
    fast_ms, slow_ms = stats.median(fast) / 1e6, stats.median(slow) / 1e6
    if slow_ms < MIN_RATIO * fast_ms:
        return None
    switches = sum(1 for i in range(1, len(blocks)) if (i in fast_blocks) != (i - 1 in fast_blocks))
    return Regimes(fast_ms=fast_ms, slow_ms=slow_ms, fast_share=len(fast) / (len(fast) + len(slow)),
                   fast_per_sec=len(fast) / (sum(fast) / 1e9), stretches=switches + 1,
                   separation=separation)
