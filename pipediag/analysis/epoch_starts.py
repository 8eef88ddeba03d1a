"""The wait at each epoch's start, apart from the steady-state wait (pure numbers, no TensorFlow).

A training loop that makes a new iterator every epoch (`for batch in dataset:` inside
`for epoch in range(E):`, or Keras `fit` without `steps_per_epoch`) pays the iterator's start
again each epoch: a shuffle buffer refilled from empty, a distributed iterator set up, a
prefetch buffer filled. That cost sits in the first step(s) after each iterator is made, not
in every step, so it is not what `prefetch` or a parallel `map` remove, and a builder that
`repeat()`s (diagnose's form) never pays it. `split_epoch_starts` takes each timed step's wait,
its whole time and the iterator it came from, and returns the start steps' cost apart from the
steady state the verdict should be decided on.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipediag import stats

MAX_START_STEPS = 8  # a start cost spread over more steps than this is not an iterator's start
MIN_START_EXCESS_NS = 1_000_000  # a start step waits at least this much more than the steady median
START_FACTOR = 3.0  # ... and more than this times the steady 90th percentile
MIN_SHARE = 0.02  # start costs under this share of the observed time are not reported


@dataclass(frozen=True)
class EpochStarts:
    """What the epoch starts inside the timed steps cost, against the steady state."""

    starts: int  # epoch starts (new iterators) inside the timed steps
    start_steps: tuple[int, ...]  # indices (into the timed steps) of the steps counted as start steps
    start_wait_ns: tuple[int, ...]  # per start: the wait of its start steps, summed, and the making of its iterator
    steady_wait_median_ns: float
    total_ns: int  # all timed steps, and the making of the iterators started among them
    steps_per_epoch: float | None  # timed steps per iterator, where one was seen whole
    made_ns: tuple[int, ...] = ()  # per start: the loop's `iter(dataset)` call, where it was timed

    @property
    def wait_per_start_ns(self) -> float:
        return stats.median(self.start_wait_ns) if self.start_wait_ns else 0.0

    @property
    def share(self) -> float:
        """The start steps' wait as a share of all the observed time."""
        return sum(self.start_wait_ns) / self.total_ns if self.total_ns else 0.0

    @property
    def found(self) -> bool:
        return bool(self.start_wait_ns) and self.share >= MIN_SHARE

    @property
    def made_per_start_ns(self) -> float:
        return stats.median(self.made_ns) if self.made_ns else 0.0

    def cost_text(self) -> str:
        """"16 ms" or, where making the iterator was timed, "22 ms (7 ms making the iterator, ...)"."""
        per = f"{self.wait_per_start_ns / 1e6:.0f} ms"
        made = self.made_per_start_ns
        if made >= 0.5e6:
            per += f" ({made / 1e6:.0f} ms making its iterator, the rest waiting for its first batch(es))"
        return per

    def text(self) -> str:
        per = self.cost_text()
        epoch = f" (an epoch here is {self.steps_per_epoch:.0f} steps)" if self.steps_per_epoch else ""
        return (f"each epoch's start cost {per} ({self.starts} epoch start(s) observed, "
                f"{100 * self.share:.0f}% of the observed time){epoch}: your loop makes a new iterator every epoch, "
                "and its start (a shuffle buffer refilled, a distributed iterator set up) is paid again each time; "
                "the verdict is decided on the steps between the starts")


def split_epoch_starts(wait_ns: tuple[int, ...] | list[int], step_ns: tuple[int, ...] | list[int],
                       epoch: tuple[int, ...] | list[int], earlier_epoch: tuple[int, ...] | list[int] = (),
                       made_ns: tuple[int, ...] | list[int] = ()) -> EpochStarts:
    """`wait_ns[k]`, `step_ns[k]` (wait included) and `epoch[k]` (the iterator it came from) of
    each timed step; `earlier_epoch`: the iterators of the steps before them (the warm-up), so each
    timed step's place in its iterator is known (without them, the first timed step's iterator is
    taken to have started before it). A start step is one of the first MAX_START_STEPS steps of an
    iterator whose first step lies inside the timed steps, while its wait stays above both
    MIN_START_EXCESS_NS over the steady median and START_FACTOR times the steady 90th percentile
    (the steady state: the steps at positions MAX_START_STEPS and later, or all but each
    iterator's first where epochs are shorter). `made_ns[k]`: how long the loop's `iter(dataset)`
    took for the iterator whose first step is k (0 for other steps; empty: not timed), a start
    cost that lies in no step: it is counted into its start's cost and into the total."""
    n = len(wait_ns)
    if not (n == len(step_ns) == len(epoch)) or (made_ns and len(made_ns) != n):
        raise ValueError("wait_ns, step_ns, epoch (and made_ns) must have one entry per step")
    position, starts_at = _positions(epoch, earlier_epoch)
    steady = [wait_ns[k] for k in range(n) if position[k] >= MAX_START_STEPS] or \
             [wait_ns[k] for k in range(n) if position[k] > 0] or list(wait_ns)
    median = stats.median(steady) if steady else 0.0
    line = max(median + MIN_START_EXCESS_NS, START_FACTOR * (stats.percentile(steady, 90) if steady else 0.0))
    start_steps: list[int] = []
    per_start: list[int] = []
    made = [made_ns[first] if made_ns else 0 for first in starts_at]
    for first, made_first in zip(starts_at, made):
        ks = []
        k = first
        while k < n and epoch[k] == epoch[first] and k - first < MAX_START_STEPS and wait_ns[k] > line:
            ks.append(k)
            k += 1
        start_steps.extend(ks)
        if ks or made_first:
            per_start.append(made_first + sum(wait_ns[j] for j in ks))
    return EpochStarts(starts=len(starts_at), start_steps=tuple(start_steps), start_wait_ns=tuple(per_start),
                       steady_wait_median_ns=median, total_ns=int(sum(step_ns)) + sum(made),
                       steps_per_epoch=_whole_epoch_length(epoch), made_ns=tuple(made) if made_ns else ())


def _positions(epoch, earlier=()) -> tuple[list[int], list[int]]:
    """Each step's position in its iterator, counted from that iterator's first step seen (in
    `earlier`, the steps before the timed ones, or in `epoch`), and the indices where an iterator
    starts inside the timed steps. Without `earlier`, the first timed step's iterator is taken to
    have started before the timed steps: its steps count as steady, not as starts."""
    position, starts_at = [], []
    first = epoch[0] if epoch else None
    before = 0  # the first timed step's iterator: its steps before the timed ones
    for e in reversed(earlier):
        if e != first:
            break
        before += 1
    for k, e in enumerate(epoch):
        if k > 0 and e == epoch[k - 1]:
            position.append(position[-1] + 1)
        elif k == 0 and (before or not earlier):
            position.append(before if earlier else MAX_START_STEPS)
        else:
            starts_at.append(k)
            position.append(0)
    return position, starts_at


def _whole_epoch_length(epoch) -> float | None:
    """Median steps of the iterators seen from their start to their end inside the timed steps."""
    lengths, k, n = [], 0, len(epoch)
    while k < n:
        j = k
        while j < n and epoch[j] == epoch[k]:
            j += 1
        if k > 0 and j < n:
            lengths.append(j - k)
        k = j
    return stats.median(lengths) if lengths else None


def without(values, indices: tuple[int, ...]) -> tuple[int, ...]:
    """`values` with the steps at `indices` left out."""
    drop = set(indices)
    return tuple(v for k, v in enumerate(values) if k not in drop)
