"""The step timings of a fit, from plain events on a made-up clock."""

from pipediag.callbacks.fit_steps import FitSteps


def fit(events, warmup=1):
    steps = FitSteps(warmup_steps=warmup)
    for kind, *args in events:
        if kind == "epoch":
            steps.current_epoch = args[0]
        else:
            getattr(steps, kind)(*args)
    return steps


def test_wait_and_rest_tile_the_training_time():
    # step k asks at t0, has the batch at t1, and ends when the next one is asked for
    s = fit([("fetch_started", 0), ("fetched", 10), ("fetch_started", 100), ("fetched", 130),
             ("fetch_started", 200), ("fetched", 205), ("cut", 300)])
    run = s.mode_run("fit_ended")
    assert s.steps == 3
    assert run.wait_ns == (30, 5) and run.compute_ns == (70, 95)
    assert run.first_step_ns == 100 and run.warmup_steps == 1 and run.warmup_ns == 100
    assert (run.start_ns, run.end_ns) == (100, 300)
    assert sum(run.wait_ns) + sum(run.compute_ns) == run.end_ns - run.start_ns


def test_time_between_epochs_is_in_no_step():
    s = fit([("fetch_started", 0), ("fetched", 10), ("fetch_started", 100), ("fetched", 110), ("cut", 150),
             ("epoch", 1), ("fetch_started", 1000), ("fetched", 1040), ("cut", 1100)], warmup=0)
    run = s.mode_run("fit_ended")
    assert run.wait_ns == (10, 10, 40) and run.compute_ns == (90, 40, 60)
    assert s.windows() == [(0, 150), (1000, 1100)]
    assert s.wait_intervals() == [(0, 10), (100, 110), (1000, 1040)]
    assert any("between epochs" in n for n in run.notes)
    assert s.epoch_numbers(1) == (1, 40, 100, (1000, 1100))


def test_exhausted_data_is_no_step_and_a_second_cut_changes_nothing():
    s = fit([("fetch_started", 0), ("fetched", 10), ("fetch_started", 50), ("fetch_failed", 60), ("cut", 99)],
            warmup=0)
    assert s.steps == 1 and s.end == [50]
    assert s.mode_run("fit_ended").compute_ns == (40,)


def test_no_run_within_warmup():
    s = fit([("fetch_started", 0), ("fetched", 10), ("cut", 20)], warmup=5)
    assert s.mode_run("fit_ended") is None
