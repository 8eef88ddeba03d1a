"""Two machine profiles, batch size by batch size: is B as fast as A? Pure numbers.

Per batch size that ran in both profiles:

- Throughput ratio B/A with its interval. The timed steps of each side are cut into contiguous
  chunks (up to 10, at least 2 steps each) and each chunk's rate is one value: consecutive steps
  are correlated (a chunk mean is what the batch-means interval of stats.py treats as
  independent), single steps would give an interval far too narrow. Welch's interval on the log
  chunk rates (analysis/comparison.unpaired_ratio) turns into a ratio with exp. The two profiles
  were not measured side by side: the interval covers the noise within each run, not a change of
  the machine between runs, which is why a tolerance applies too (below).
- Step time p50 ratio B/A, with the interval from the two medians' order-statistic intervals
  (B's low over A's high, B's high over A's low), as the sweep's gains are bounded.

With K batch sizes compared, each interval is at level 1 - 0.05/K (Bonferroni), so "no
difference" holds at 95% over all of them together. A batch size differs when its throughput
interval excludes 1 *and* the ratio is off by more than the tolerance (default 5%): a
difference too small to matter is not reported. "No difference" needs more than an interval
that contains 1: the interval must lie within the tolerance (equivalence shown); one that
contains 1 but reaches beyond it is "inconclusive" (too wide to tell). The same measurement on
both sides (a profile against itself) is "same" by definition. A batch size that ran in one profile and ran out
of memory in the other is a difference of its own (the OOM edge moved).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from pipediag import stats
from pipediag.analysis.compare import unpaired_ratio
from pipediag.records.kinds import OK, OUT_OF_MEMORY

CHUNKS = 10
CONFIDENCE = 0.95


@dataclass(frozen=True)
class PointTimes:
    """One batch size of a profile, as the comparison needs it."""

    status: str  # ok | out_of_memory | skipped | interrupted
    step_ns: Sequence[int]


@dataclass(frozen=True)
class SizeRatio:
    batch_size: int
    throughput_ratio: float | None  # B / A; > 1: B is faster
    throughput_low: float | None
    throughput_high: float | None
    step_p50_ratio: float | None  # B / A; > 1: B's steps take longer
    step_p50_low: float | None
    step_p50_high: float | None
    level: float  # the confidence of each interval (Bonferroni over the sizes)
    finding: str  # slower | faster | same | small | unclear | too few steps (see `finding`)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ProfileComparison:
    sizes: tuple[SizeRatio, ...]
    only_a: tuple[int, ...]  # batch sizes that ran in A only (not measured, or skipped, in B)
    only_b: tuple[int, ...]
    tolerance: float
    verdict: str  # the one line: "no difference", "B is 12% slower at batch 64", ...
    differs: bool | None  # None: nothing to compare
    lines: tuple[str, ...]  # the details behind the verdict
    context: tuple[str, ...] = ()  # what differs between the machines (backend, GPU, versions)

    def slower_than(self, fraction: float) -> bool:
        """B slower than A by more than `fraction` at some batch size, with confidence."""
        return any(s.throughput_high is not None and s.throughput_high < 1.0 - fraction for s in self.sizes)


def chunk_rates(step_ns: Sequence[int], chunks: int = CHUNKS) -> list[float]:
    """Steps per second of up to `chunks` contiguous chunks of at least 2 steps."""
    n = len(step_ns)
    k = min(chunks, n // 2)
    if k < 2:
        return []
    size = n // k
    return [size * 1e9 / sum(step_ns[i * size:(i + 1) * size]) for i in range(k)]


def size_ratio(batch_size: int, a_ns: Sequence[int], b_ns: Sequence[int], level: float, tolerance: float) -> SizeRatio:
    interval = unpaired_ratio(chunk_rates(a_ns), chunk_rates(b_ns), level, CONFIDENCE)
    a_ci, b_ci = stats.median_ci(a_ns), stats.median_ci(b_ns)
    step = low = high = None
    if a_ns and b_ns:
        step = stats.median(b_ns) / stats.median(a_ns)
        if a_ci and b_ci:
            low, high = b_ci[0] / a_ci[1], b_ci[1] / a_ci[0]
    if a_ns and list(a_ns) == list(b_ns):  # the same measurement (a profile against itself)
        return SizeRatio(batch_size, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, level, "same")
    if interval is None:
        return SizeRatio(batch_size, None, None, None, step, low, high, level, "too few steps")
    return SizeRatio(batch_size, interval.ratio, interval.low, interval.high, step, low, high, level,
                     finding(interval.ratio, interval.low, interval.high, tolerance))


def finding(ratio: float, low: float, high: float, tolerance: float) -> str:
    """slower / faster: the interval excludes 1 and the ratio is off by more than the tolerance;
    same: the whole interval lies within ±tolerance (equivalence shown); small: it excludes 1 but
    the ratio is within the tolerance; unclear: it contains 1 but reaches beyond ±tolerance (too
    wide to tell)."""
    if high < 1.0 and ratio < 1.0 - tolerance:
        return "slower"
    if low > 1.0 and ratio > 1.0 + tolerance:
        return "faster"
    if 1.0 - tolerance <= low and high <= 1.0 + tolerance:
        return "same"
    return "unclear" if low <= 1.0 <= high else "small"


def compare_points(a: Mapping[int, PointTimes], b: Mapping[int, PointTimes], tolerance: float = 0.05,
                   context: tuple[str, ...] = ()) -> ProfileComparison:
    ran_a = {size for size, p in a.items() if p.status == OK and p.step_ns}
    ran_b = {size for size, p in b.items() if p.status == OK and p.step_ns}
    common = sorted(ran_a & ran_b)
    level = 1.0 - (1.0 - CONFIDENCE) / max(1, len(common))
    sizes = tuple(size_ratio(s, a[s].step_ns, b[s].step_ns, level, tolerance) for s in common)
    lines: list[str] = []
    memory = []
    for size in sorted(set(a) & set(b)):
        if a[size].status == OK and b[size].status == OUT_OF_MEMORY:
            memory.append(f"B ran out of memory at batch {size}, where A ran")
        elif a[size].status == OUT_OF_MEMORY and b[size].status == OK:
            memory.append(f"A ran out of memory at batch {size}, where B ran")
    slower = sorted((s for s in sizes if s.finding == "slower"), key=lambda s: s.throughput_ratio)
    faster = sorted((s for s in sizes if s.finding == "faster"), key=lambda s: -s.throughput_ratio)
    parts = []
    if slower:
        worst = slower[0]
        parts.append(f"B is {100 * (1 - worst.throughput_ratio):.0f}% slower at batch {worst.batch_size}")
        lines += [f"batch {s.batch_size}: B/A throughput {s.throughput_ratio:.3f} [{s.throughput_low:.3f}, "
                  f"{s.throughput_high:.3f}]" for s in slower]
    if faster:
        best = faster[0]
        parts.append(f"B is {100 * (best.throughput_ratio - 1):.0f}% faster at batch {best.batch_size}")
    parts += memory
    if parts:
        verdict, differs = "; ".join(parts), True
    elif not sizes:
        verdict, differs = "inconclusive: no batch size ran in both profiles", None
    elif all(s.finding == "too few steps" for s in sizes):
        verdict, differs = "inconclusive: too few timed steps for an interval at any batch size", None
    elif any(s.finding in ("unclear", "too few steps") for s in sizes):
        wide = [f"{s.batch_size} [{s.throughput_low:.2f}, {s.throughput_high:.2f}]" if s.finding == "unclear"
                else f"{s.batch_size} (too few steps for an interval)" for s in sizes
                if s.finding in ("unclear", "too few steps")]
        verdict, differs = (f"inconclusive: at batch {', '.join(wide)} the throughput interval reaches beyond "
                            f"±{100 * tolerance:.0f}%: measure longer (--seconds-per-size) on a quieter machine"), None
    else:
        verdict, differs = (f"no difference: at every batch size B's throughput is within ±{100 * tolerance:.0f}% "
                            "of A's"), False
        small = [s for s in sizes if s.finding == "small"]
        if small:
            lines.append("differences smaller than the tolerance at batch "
                         + ", ".join(f"{s.batch_size} ({s.throughput_ratio:.3f})" for s in small))
    unmeasured = [s.batch_size for s in sizes if s.finding == "too few steps"]
    if unmeasured and differs is not None:
        lines.append(f"too few timed steps for an interval at batch {', '.join(map(str, unmeasured))}")
    only_a = tuple(sorted(ran_a - ran_b - {s for s in b if b[s].status == OUT_OF_MEMORY}))
    only_b = tuple(sorted(ran_b - ran_a - {s for s in a if a[s].status == OUT_OF_MEMORY}))
    if only_a or only_b:
        lines.append("not compared (measured in one profile only): "
                     + "; ".join(f"{side} {', '.join(map(str, got))}" for side, got in (("A", only_a), ("B", only_b))
                                 if got))
    return ProfileComparison(sizes, only_a, only_b, tolerance, verdict, differs, tuple(lines), context)
