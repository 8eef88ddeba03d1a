"""When the observed steps pin the rate down (run.observe.Source.enough), on scripted step times."""

import random

from pipediag.records.run import StopRule
from pipediag.run.observe import Source

MS = 1_000_000
RULE = StopRule(max_seconds=60, min_seconds=1.0, min_steps=20, warmup_steps=5)


def observed(step_ms: list[float]) -> tuple[Source, int]:
    """A source whose loop took steps of these lengths (a 0.1-ms wait each); the clock at the end."""
    source = Source(dataset=None, number=1, site=None)
    now = 0
    for ms in step_ms:
        source.steps.fetch_started(now)
        source.steps.fetched(now + MS // 10)
        now += int(ms * MS)
    source.steps.cut(now)
    return source, now


def noisy(ms: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [ms * (1 + rng.uniform(-0.03, 0.03)) for _ in range(n)]


def test_a_steady_loop_is_stable_over_all_its_steps():
    source, now = observed(noisy(10, 5, 1) + noisy(10, 200, 2))
    assert source.enough(RULE, None, now) == "stable"
    assert source.settled_from is None
    assert source.pipeline_run("stable").steps == 200


def test_a_slower_first_epoch_is_left_out_when_the_later_half_is_stable():
    """A first epoch three times slower (a cache filling), then a steady rate: not stable over
    all the steps, stable over the later half, which then makes the pipeline mode."""
    source, now = observed(noisy(30, 5, 3) + noisy(30, 100, 4) + noisy(10, 400, 5))
    assert source.enough(RULE, None, now) == "stable"
    assert source.settled_from == 5 + 250
    run = source.pipeline_run("stable")
    assert run.steps == 250 and run.warmup_steps == 255
    assert max(run.compute_ns) < 11 * MS  # only the steady steps
    assert any("left out as warm-up" in n for n in run.notes)


def test_a_rate_that_keeps_changing_is_not_enough():
    steps = [10 + 20 * (k % 2) for k in range(400)]  # alternating 10 / 30 ms in chunks: never pinned down
    source, now = observed([10] * 5 + [s * (1 + (k // 40) % 3) for k, s in enumerate(steps)])
    assert source.enough(RULE, None, now) is None
