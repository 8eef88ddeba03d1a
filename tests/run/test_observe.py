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


def test_a_dataset_that_caches_is_observed_after_its_first_pass():
    """The first pass (40 batches) fills the cache at three times the steady step time; the
    observation waits for it, and the pipeline mode is the cached epochs only."""
    from pipediag.backends.tf import tf
    from pipediag.run.observe import cache_pass_batches_of

    dataset = tf.data.Dataset.range(160).map(lambda x: x * 2).cache().shuffle(16).batch(4)
    assert cache_pass_batches_of(dataset) == 40
    assert cache_pass_batches_of(tf.data.Dataset.range(160).batch(4)) is None  # no cache
    assert cache_pass_batches_of(dataset.repeat()) is None  # no end: no pass length to wait for
    source = Source(dataset=dataset, number=1, site=None)
    steps = noisy(30, 40, 6) + noisy(10, 300, 7)
    now = 0
    verdicts = []
    for ms in steps:
        source.steps.cut(now)
        verdicts.append(source.enough(RULE, None, now))
        source.steps.fetch_started(now)
        source.steps.fetched(now + MS // 10)
        now += int(ms * MS)
    assert all(v is None for v in verdicts[:41])  # nothing decided inside the first pass
    first = next(k for k, v in enumerate(verdicts) if v)
    assert verdicts[first] == "stable"
    run = source.pipeline_run("stable")
    assert run.warmup_steps == 40 and max(run.compute_ns) < 11 * MS
    assert any("first pass (40 batches) filled the cache" in n for n in run.notes)


def test_a_first_pass_too_long_to_wait_for_is_not_waited_for():
    from pipediag.backends.tf import tf

    dataset = tf.data.Dataset.range(40_000).cache().batch(4)  # 10,000 batches of 30 ms: 300 s
    source = Source(dataset=dataset, number=1, site=None)
    now, verdict = 0, None
    for ms in noisy(30, 400, 8):
        source.steps.cut(now)
        verdict = verdict or source.enough(RULE, None, now)
        source.steps.fetch_started(now)
        source.steps.fetched(now + MS // 10)
        now += int(ms * MS)
    assert verdict == "stable" and source.cache_pass == 0 and source.cache_gave_up_s > 100
    assert any("would take about" in n for n in source.pipeline_run("stable").notes)


def test_a_first_pass_is_projected_without_its_compile_step():
    """469 cached batches of 30 ms after a 1.25-s first step (tracing): 15 s, waited for. Counting
    the first step as one of the pass's, 2 s in projects 469 x 2.0 / 26 = 36 s, past the 30-s cap."""
    from pipediag.backends.tf import tf

    dataset = tf.data.Dataset.range(469 * 4).cache().batch(4)
    source = Source(dataset=dataset, number=1, site=None)
    rule = StopRule(max_seconds=60, min_seconds=1.0, min_steps=20, warmup_steps=5, warmup_max_seconds=30)
    now, verdict = 0, None
    for ms in [1250] + noisy(30, 700, 9):
        source.steps.cut(now)
        verdict = verdict or source.enough(rule, None, now)
        source.steps.fetch_started(now)
        source.steps.fetched(now + MS // 10)
        now += int(ms * MS)
    assert source.cache_gave_up_s is None and source.cache_pass == 469
    run = source.pipeline_run(verdict)
    assert run.warmup_steps == 469 and any("filled the cache" in n for n in run.notes), run.notes
