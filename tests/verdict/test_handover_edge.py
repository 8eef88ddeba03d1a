"""The host edge on scripted numbers: a wait that is the hand-over of each batch is not input."""

import pytest

from pipediag.analysis.handover import Handover
from pipediag.verdict import thresholds as T
from pipediag.verdict.handover_edge import HOST_LIMIT_HANDOVER
from pipediag.verdict.rules import decide
from tests.summaries import summary


def handover(fetch_ms, transfer_ms=None, rel_ci=0.05):
    total = fetch_ms + (transfer_ms or 0.0)
    return Handover(batches=2000, ms_mean=total, ms_mean_ci=(total * (1 - rel_ci), total * (1 + rel_ci)),
                    fetch_ms_mean=fetch_ms, fetch_ms_mean_ci=(fetch_ms * (1 - rel_ci), fetch_ms * (1 + rel_ci)),
                    transfer_ms_mean=transfer_ms, batch_format="numpy",
                    transfer_text="jax.device_put to cuda:0, waited for" if transfer_ms else "JAX runs on the CPU")


def issue_case(wait=0.23, input_rate=14000.0, gpu_util=3.0):
    """Issue 14: a 0.2 ms JAX step (4,400 steps/s free) fed from memory; input alone 14,000/s."""
    pipeline_rate = 3400.0  # each step waits ~0.068 ms: 23% of 0.29 ms
    return {
        "synthetic": summary("synthetic", 4400, gpu_util=gpu_util),
        "pipeline": summary("pipeline", pipeline_rate, wait=wait, gpu_util=gpu_util),
        "input_only": summary("input_only", input_rate),
        "tuned": None,
    }


def test_the_issue_case_is_host_at_the_hand_over_not_input():
    v = decide(issue_case(), handover=handover(0.055))
    assert v.bottleneck == "host" and v.confidence == "high"
    assert v.headline.startswith("host-bound at the hand-over")
    assert v.facts["host_limit"] == HOST_LIMIT_HANDOVER and v.facts["wait_is_handover"]
    assert any("the wait is the hand-over, not the pipeline" in e for e in v.evidence)
    # Without the hand-over's timing the same numbers read as input, as before.
    assert decide(issue_case()).bottleneck == "input"


def test_without_gpu_readings_the_host_edge_is_medium():
    v = decide(issue_case(gpu_util=None), handover=handover(0.055))
    assert v.bottleneck == "host" and v.confidence == "medium"


@pytest.mark.parametrize("fetch_ms, expected", [(0.040, "host"), (0.030, "input")])
def test_the_wait_must_be_within_the_margin_of_the_hand_over(fetch_ms, expected):
    # wait per step 0.0676 ms; the margin covers it when 2x the hand-over's upper bound reaches it
    wait_ms = 0.23 * 1e3 / 3400
    assert (T.HANDOVER_WAIT_MARGIN * fetch_ms * 1.05 >= wait_ms) == (expected == "host")
    assert decide(issue_case(), handover=handover(fetch_ms)).bottleneck == expected


@pytest.mark.parametrize("input_rate, expected", [(5800.0, "host"), (5500.0, "input"), (3000.0, "input")])
def test_the_pipeline_alone_must_keep_up_clearly(input_rate, expected):
    # 5800 / 4400 = 1.32x (at least INPUT_HEADROOM, interval above 1); 5500 / 4400 = 1.25x
    assert decide(issue_case(input_rate=input_rate), handover=handover(0.055)).bottleneck == expected


def test_a_moderate_wait_that_is_the_hand_over_is_not_called_input():
    # 10% of the time waiting, all of it hand-over: below the 20% line the step's rules decide
    cases = issue_case(wait=0.10, gpu_util=80.0)
    cases["pipeline"] = summary("pipeline", 4000, wait=0.10, gpu_util=80.0)
    v = decide(cases, handover=handover(0.025))
    assert v.bottleneck == "compute" and v.facts["wait_is_handover"]
    assert "host_limit" not in v.facts
    assert decide(cases).bottleneck == "input"  # what it said before


def test_a_real_input_bottleneck_is_still_input():
    cases = {"synthetic": summary("synthetic", 200), "pipeline": summary("pipeline", 50, wait=0.7),
             "input_only": summary("input_only", 52), "tuned": None}
    assert decide(cases, handover=handover(0.05)).bottleneck == "input"


def test_the_host_edge_fixes_do_more_work_per_hand_over_and_never_cache():
    from pipediag.fixes.recommend import recommend

    cases = issue_case()
    v = decide(cases, handover=handover(0.055))
    fixes = recommend(v, cases, [], gpu_present=True, framework="jax").fixes
    kinds = [f.kind for f in fixes]
    assert kinds == ["batch_size", "steps_per_call", "device_prefetch", "batch_format"]
    assert "jax.lax.scan" in fixes[1].code and "prefetch_to_device" in fixes[2].code
    assert all(f.measured_speedup is None for f in fixes)
    keras = recommend(v, cases, [], gpu_present=True, framework="tensorflow").fixes
    assert "steps_per_execution=8" in keras[1].code


def test_a_pipeline_no_slower_than_the_hand_over_itself_keeps_up_too():
    # tiny_step on the 2-core machine (flock, 2026-12-01): input alone only 1.13x the free step,
    # but 0.32 ms a batch against 0.35 ms to hand over a ready one; the step waited 0.63 ms a batch.
    cases = {"synthetic": summary("synthetic", 2762), "pipeline": summary("pipeline", 747, wait=0.47),
             "input_only": summary("input_only", 3118), "tuned": None}
    ready = Handover(batches=8559, ms_mean=0.346, ms_mean_ci=(0.233, 0.458), fetch_ms_mean=0.345,
                     fetch_ms_mean_ci=(0.232, 0.457), transfer_ms_mean=None, batch_format="numpy",
                     transfer_text="JAX runs on the CPU here: there is no device copy")
    v = decide(cases, handover=ready)
    assert v.bottleneck == "host" and v.confidence == "medium"
    assert any("no more than the hand-over itself" in e for e in v.evidence)
    # A pipeline alone 1.2x slower than the hand-over's upper bound is not "as fast": input again
    slower = dict(cases, input_only=summary("input_only", 1e3 / (0.457 * 1.2)))
    assert decide(slower, handover=ready).bottleneck == "input"


def h200_case(input_rate=2.2 * 4400):
    """Issue 25's miss: input alone 2.2x the free step, the step waiting 23% of the time, and the
    hand-over not timed (pipediag's own device copy failed on TensorFlow tensors)."""
    return issue_case(input_rate=input_rate)


MISSING = "pipediag's own hand-over timing raised TypeError: Cannot interpret 'tf.float32' as a data type"


def test_a_failed_hand_over_timing_does_not_leave_a_confident_input_verdict():
    assert decide(h200_case()).confidence == "high"  # the miss: without the timing, "input (high)"
    v = decide(h200_case(), handover_missing=MISSING)
    assert v.bottleneck == "input" and v.confidence == "low"
    assert v.facts["handover_missing"] == MISSING
    line = next(e for e in v.evidence if "could not be timed" in e)
    assert "2.20x the free step" in line and "may well be the hand-over" in line and MISSING in line


def test_a_failed_hand_over_timing_lowers_by_one_when_the_pipeline_does_not_clearly_keep_up():
    # 4600 / 4400 = 1.05x: the edge could still have explained the wait (a pipeline as fast as the
    # hand-over itself), so not sure either; but nothing points at the hand-over: one level lower.
    cases = h200_case(input_rate=4600.0)
    assert decide(cases).confidence == "high"
    v = decide(cases, handover_missing=MISSING)
    assert v.confidence == "medium" and not any("may well be" in e for e in v.evidence)


def test_a_pipeline_too_slow_alone_is_input_whether_or_not_the_hand_over_was_timed():
    cases = {"synthetic": summary("synthetic", 200), "pipeline": summary("pipeline", 50, wait=0.7),
             "input_only": summary("input_only", 52), "tuned": None}
    v = decide(cases, handover_missing=MISSING)
    assert (v.bottleneck, v.confidence) == ("input", "high") and "handover_missing" not in v.facts


# A custom loop over `strategy.experimental_distribute_dataset` (the TF tutorial's MirroredStrategy
# loop, scenarios/scripts/tf_distribute_custom_training): each next() on the distributed iterator
# costs something whatever the pipeline. `pipediag run` now times the hand-over through that
# iterator; on the 2-core machine (2026-12-03 14:57, under the CPU lock) it read 0.579 ms (95%
# 0.524-0.634), where the plain hand-over diagnose times on the builder read 0.201 ms (0.195-0.207).
DISTRIBUTED = Handover(batches=580, ms_mean=0.579, ms_mean_ci=(0.524, 0.634), fetch_ms_mean=0.569,
                       fetch_ms_mean_ci=(0.515, 0.622), transfer_ms_mean=None, batch_format="tf",
                       transfer_text="the distributed iterator ... puts each replica's slice on its device in get_next",
                       through="the distributed iterator of strategy.experimental_distribute_dataset "
                               "(MirroredStrategy, 1 replica(s))")
PLAIN = Handover(batches=1456, ms_mean=0.201, ms_mean_ci=(0.195, 0.207), fetch_ms_mean=0.194,
                 fetch_ms_mean_ci=(0.188, 0.200), transfer_ms_mean=None, batch_format="tf",
                 transfer_text="the step's framework (tensorflow) uses no accelerator here: there is no device copy")


def mirrored_loop(wait_ms, free_ms=1e3 / 157.3, input_rate=355.0):
    """The loop's step free (157.3/s, run at 2026-12-02 18:05) and fed with `wait_ms` per step."""
    fed_ms = free_ms + wait_ms
    return {"synthetic": summary("synthetic", 1e3 / free_ms),
            "pipeline": summary("pipeline", 1e3 / fed_ms, wait=wait_ms / fed_ms),
            "input_only": summary("input_only", input_rate), "tuned": None}


def test_a_wait_that_is_the_distributed_iterators_own_cost_is_the_hand_over_once_timed_through_it():
    # 1.0 ms a step: what the tutorial's step waited fed one ready batch through the distributed
    # iterator (benchmarks/results/distributed-next-cpu-2026-12-03.md), 14% of the step
    cases = mirrored_loop(1.0)
    v = decide(cases, handover=DISTRIBUTED)
    assert v.bottleneck == "compute" and v.facts["wait_is_handover"] and "host_limit" not in v.facts
    assert any("already made through the distributed iterator of strategy.experimental_distribute_dataset" in e
               for e in v.evidence)
    # the same wait against a plain iterator's hand-over (what was timed before): input
    assert decide(cases, handover=PLAIN).bottleneck == "input"


def test_a_wait_beyond_twice_the_distributed_hand_over_is_still_input():
    # 2026-12-02 18:05: 19% of the step, 1.65 ms, more than 2x the distributed hand-over's upper
    # end (1.24 ms): the rule does not call it hand-over, with either timing
    cases = mirrored_loop(1.65)
    assert T.HANDOVER_WAIT_MARGIN * DISTRIBUTED.fetch_ms_mean_ci[1] < 1.65
    for timed in (DISTRIBUTED, PLAIN):
        v = decide(cases, handover=timed)
        assert v.bottleneck == "input" and not v.facts.get("wait_is_handover")


# `pipediag run` on a loop over a distributed dataset reads the pipeline alone through the loop's
# distributed iterator (input_only) and through a plain one (Handover.plain_batches_per_sec). The
# H200 (2026-12-04 07:12, benchmarks/results/run-scripts-gpu-2026-12-04-0712.md), the tutorial's
# custom MirroredStrategy loop: free step 3.81 ms, fed step waiting 2.90 ms; the pipeline alone
# 301 batches/s through the distributed iterator and 3,117 through a plain one.
def with_plain(handover: Handover, plain_rate: float, rel_ci: float = 0.03) -> Handover:
    from dataclasses import replace

    return replace(handover, plain_batches_per_sec=plain_rate,
                   plain_batches_per_sec_ci=(plain_rate * (1 - rel_ci), plain_rate * (1 + rel_ci)))


def test_the_distributed_iterators_cost_on_a_real_pipeline_is_the_hand_over_once_read_both_ways():
    cases = mirrored_loop(2.90, free_ms=3.81, input_rate=301.0)
    assert decide(cases, handover=DISTRIBUTED).bottleneck == "input"  # before: the ready batch's 0.58 ms only
    v = decide(cases, handover=with_plain(DISTRIBUTED, 3117.0))
    assert v.bottleneck == "host" and v.facts["host_limit"] == HOST_LIMIT_HANDOVER
    assert v.headline.startswith("host-bound at the hand-over: taking each batch through the distributed iterator")
    assert v.facts["distributed_handover_ms"] == pytest.approx(1e3 / 301.0) and v.facts["handover_is_distributed_read"]
    line = next(e for e in v.evidence if "through a plain tf.data iterator" in e)
    assert "3117 batches/s" in line and "costs 3.322 ms" in line and "not the pipeline" in line


def test_the_distributed_hand_over_fixes_call_the_iterator_less_often():
    from pipediag.fixes.recommend import recommend

    cases = mirrored_loop(2.90, free_ms=3.81, input_rate=301.0)
    v = decide(cases, handover=with_plain(DISTRIBUTED, 3117.0))
    fixes = recommend(v, cases, [], gpu_present=True, framework="tensorflow").fixes
    assert [f.kind for f in fixes] == ["batch_size", "steps_per_call"]  # no device copy or format to change
    assert "steps_per_execution=8" in fixes[1].code and "strategy.run(train_step, args=(next(iterator),))" in fixes[1].code
    assert "3.32 ms" in fixes[0].basis and all(f.measured_speedup is None for f in fixes)


@pytest.mark.parametrize("wait_ms, expected", [(6.5, "host"), (6.8, "input")])
def test_the_wait_must_be_within_twice_the_distributed_read(wait_ms, expected):
    # 2x 3.322 ms = 6.64 ms
    cases = mirrored_loop(wait_ms, free_ms=3.81, input_rate=301.0)
    assert decide(cases, handover=with_plain(DISTRIBUTED, 3117.0)).bottleneck == expected


@pytest.mark.parametrize("plain_rate, expected", [(350.0, "host"), (330.0, "input")])
def test_the_pipeline_through_a_plain_iterator_must_clearly_outrun_the_free_step(plain_rate, expected):
    # free 262.5/s: 350 is 1.33x (interval 1.25-1.42x, above 1); 330 is 1.26x, under INPUT_HEADROOM
    cases = mirrored_loop(2.90, free_ms=3.81, input_rate=301.0)
    assert decide(cases, handover=with_plain(DISTRIBUTED, plain_rate)).bottleneck == expected


def test_a_distributed_read_no_slower_than_the_plain_one_adds_nothing():
    # the distributed read as fast as the plain one: no hand-over beyond the ready batch's
    cases = mirrored_loop(2.90, free_ms=3.81, input_rate=3200.0)
    v = decide(cases, handover=with_plain(DISTRIBUTED, 3117.0))
    assert "distributed_handover_ms" not in v.facts


def test_on_two_cores_the_same_cost_under_a_slow_step_leaves_the_step_as_the_limit():
    # the 2-core machine (2026-12-04, 6c423cc): free step 43.7 ms, the loop waiting 3.11 ms (7%), the
    # pipeline alone 410 batches/s through the distributed iterator and 2,379 through a plain one
    cases = mirrored_loop(3.11, free_ms=43.7, input_rate=410.0)
    assert decide(cases, handover=DISTRIBUTED).bottleneck == "input"  # what run said then
    v = decide(cases, handover=with_plain(DISTRIBUTED, 2379.0))
    assert v.bottleneck == "compute" and v.facts["wait_is_handover"] and "host_limit" not in v.facts


def test_the_plain_read_survives_the_json():
    h = with_plain(DISTRIBUTED, 3117.0)
    back = Handover.from_dict(__import__("json").loads(__import__("json").dumps(h.to_dict())))
    assert back == h and isinstance(back.plain_batches_per_sec_ci, tuple)
    old = {k: v for k, v in DISTRIBUTED.to_dict().items() if not k.startswith("plain_")}
    assert Handover.from_dict(old).plain_batches_per_sec is None  # a report written before these fields


def test_a_loop_on_the_partial_batch_path_is_told_to_give_batches_one_shape_first():
    from dataclasses import replace

    from pipediag.fixes.recommend import recommend
    from pipediag.records.stage import Stage

    cases = mirrored_loop(2.90, free_ms=3.81, input_rate=301.0)
    v = decide(cases, handover=replace(with_plain(DISTRIBUTED, 3117.0), partial_batches=True))
    assert v.facts["distributed_partial_batches"] is True
    stages = [Stage(0, "n0", "TensorSliceDataset", "source"),
              Stage(1, "n1", "ShuffleDatasetV3", "shuffle", buffer_size=60000),
              Stage(2, "n2", "BatchDatasetV2", "batch", buffer_size=64)]
    fixes = recommend(v, cases, [], gpu_present=True, framework="tensorflow", stages=stages).fixes
    assert [f.kind for f in fixes] == ["static_batches", "batch_size", "steps_per_call"]
    assert fixes[0].stage == "batch(64)" and fixes[0].title.startswith("`batch(64)` may end with a partial batch")
    assert "ds.batch(64, drop_remainder=True)" in fixes[0].code and ".repeat()" in fixes[0].code
    # not on that path (fit, or batches of one shape already): no such fix
    v = decide(cases, handover=replace(with_plain(DISTRIBUTED, 3117.0), partial_batches=False))
    fixes = recommend(v, cases, [], gpu_present=True, framework="tensorflow", stages=stages).fixes
    assert [f.kind for f in fixes] == ["batch_size", "steps_per_call"]


def test_a_distributed_read_cheaper_than_the_ready_batchs_get_next_leaves_the_ready_hand_over_named():
    # 0.5 ms a batch through the distributed iterator, under the ready batch's 0.622-ms upper bound:
    # the plain read (0.2 ms) still shows the pipeline keeps up; the hand-over named is the ready one
    from pipediag.fixes.recommend import recommend

    cases = mirrored_loop(1.0, free_ms=3.81, input_rate=2000.0)
    cases["pipeline"] = summary("pipeline", 1e3 / 4.81, wait=1.0 / 4.81)
    v = decide(cases, handover=with_plain(DISTRIBUTED, 5000.0))
    assert v.bottleneck == "host" and v.facts["handover_is_distributed_read"] is False
    assert v.headline.startswith("host-bound at the hand-over: giving each batch to the step costs 0.579 ms")
    assert any(e.startswith("handing over a batch that is already made through") for e in v.evidence)
    fixes = recommend(v, cases, [], gpu_present=True, framework="tensorflow").fixes
    assert [f.kind for f in fixes] == ["batch_size", "steps_per_call", "device_prefetch", "batch_format"]


# tf_tiny_step on an H100 (docs/gpu-validation.md, run 32): a tiny Keras step on TensorFlow's GPU
# build, its batches from memory. The ready batch's get_next read 0.107 ms with nothing between the
# calls; pipeline mode waited 0.265 ms a batch; with the step between the calls the same get_next
# took about 0.295 ms (benchmarks/tf_gpu/handover_beside_step.py, the same machine that morning).
def tiny_tf_step_case():
    return {"synthetic": summary("synthetic", 673, gpu_util=2.0), "pipeline": summary("pipeline", 605, wait=0.16, gpu_util=2.0),
            "input_only": summary("input_only", 7435), "tuned": None}


def tiny_tf_handover(beside_ms=None):
    from dataclasses import replace

    alone = Handover(batches=892, ms_mean=0.330, ms_mean_ci=(0.320, 0.339), fetch_ms_mean=0.107,
                     fetch_ms_mean_ci=(0.105, 0.110), transfer_ms_mean=0.222, batch_format="tf",
                     transfer_text="tf.identity on /GPU:0 and sync_devices()")
    if beside_ms is None:
        return alone
    return replace(alone, beside_step_fetch_ms_mean=beside_ms,
                   beside_step_fetch_ms_mean_ci=(beside_ms * 0.95, beside_ms * 1.05), beside_step_batches=400)


def test_a_get_next_timed_alone_that_leaves_the_wait_unexplained_asks_for_the_reading_beside_the_step():
    from pipediag.verdict.handover_edge import wants_beside_step

    cases = tiny_tf_step_case()
    # 0.265 ms of wait against 2x 0.110: not explained by the reading alone, so it reads as input
    assert decide(cases, handover=tiny_tf_handover()).bottleneck == "input"
    assert wants_beside_step(cases["synthetic"], cases["pipeline"], cases["input_only"], tiny_tf_handover())
    v = decide(cases, handover=tiny_tf_handover(beside_ms=0.295))
    assert v.bottleneck == "host" and v.facts["wait_is_handover"]
    assert v.facts["beside_step_fetch_ms"] == 0.295
    assert any("with the step run between the calls, the same get_next took 0.295 ms" in e for e in v.evidence)


def test_the_reading_beside_the_step_is_asked_for_only_where_it_could_change_the_verdict():
    from pipediag.verdict.handover_edge import wants_beside_step

    cases = issue_case()
    # the reading alone already explains the wait
    assert not wants_beside_step(cases["synthetic"], cases["pipeline"], cases["input_only"], handover(0.055))
    # the pipeline alone does not keep up: the wait is the pipeline's, whatever get_next costs
    slow = issue_case(input_rate=3000.0)
    assert not wants_beside_step(slow["synthetic"], slow["pipeline"], slow["input_only"], handover(0.010))
    # no wait to explain
    idle = issue_case(wait=0.02)
    assert not wants_beside_step(idle["synthetic"], idle["pipeline"], idle["input_only"], handover(0.010))
    # no input_only mode, no hand-over
    assert not wants_beside_step(cases["synthetic"], cases["pipeline"], None, handover(0.010))
    assert not wants_beside_step(cases["synthetic"], cases["pipeline"], cases["input_only"], None)
    # where it could: the pipeline keeps up, the wait is beyond 2x the reading alone, the step on a GPU
    assert wants_beside_step(cases["synthetic"], cases["pipeline"], cases["input_only"], handover(0.010, 0.05))
    # ... but not for a step on the CPU (no device copy): there a get_next slowed beside it is contention
    assert not wants_beside_step(cases["synthetic"], cases["pipeline"], cases["input_only"], handover(0.010))


def test_a_wait_beyond_the_reading_beside_the_step_stays_input():
    # the step waited 0.265 ms a batch; beside the step a ready batch took 0.110 ms: the wait is
    # more than 2x what handing over a ready batch costs in the loop, so it is not put on the hand-over
    v = decide(tiny_tf_step_case(), handover=tiny_tf_handover(beside_ms=0.110))
    assert v.bottleneck == "input"
    assert "wait_is_handover" not in v.facts


def test_the_reading_beside_the_step_round_trips_through_the_json():
    h = tiny_tf_handover(beside_ms=0.295)
    again = Handover.from_dict(h.to_dict())
    assert again == h and again.beside_step_fetch_ms_mean_ci == (0.295 * 0.95, 0.295 * 1.05)
    assert again.beside_step_fetch_ms_high == pytest.approx(0.295 * 1.05)
    assert Handover.from_dict({k: v for k, v in tiny_tf_handover().to_dict().items()
                               if not k.startswith("beside")}).beside_step_fetch_ms_high is None


def tf_text_case():
    """real/tf_text on the 2-core machine, accuracy run 26 (2026-12-06): a Keras step on the CPU,
    its pipeline alone 3.07x the free step, the step waiting 11% of the time (0.553 ms a batch)."""
    return {"synthetic": summary("synthetic", 260.2), "pipeline": summary("pipeline", 200.1, wait=0.111),
            "input_only": summary("input_only", 798.5), "tuned": None}


def tf_text_handover(beside_ms=None):
    from dataclasses import replace

    alone = Handover(batches=1460, ms_mean=0.200, ms_mean_ci=(0.192, 0.208), fetch_ms_mean=0.193,
                     fetch_ms_mean_ci=(0.185, 0.200), transfer_ms_mean=None, batch_format="tf",
                     transfer_text="the step's framework (tensorflow) uses no accelerator here: there is no device copy")
    if beside_ms is None:
        return alone
    return replace(alone, beside_step_fetch_ms_mean=beside_ms, beside_step_fetch_ms_mean_ci=(0.283, 0.302),
                   beside_step_batches=74)


def test_a_step_on_the_cpu_gets_no_reading_beside_it_and_a_saved_one_is_not_used():
    from pipediag.verdict.handover_edge import wants_beside_step

    cases = tf_text_case()
    # the wait (0.553 ms) is beyond 2x the reading alone (0.200), the pipeline keeps up: on a GPU
    # this would ask for the reading beside the step; on the CPU it is contention's to read
    assert not wants_beside_step(cases["synthetic"], cases["pipeline"], cases["input_only"], tf_text_handover())
    without = decide(cases, handover=tf_text_handover())
    # run 26 saved a reading beside the step (0.292 ms, up to 0.302: 2x that explains 0.553); the
    # edge does not take it, so the verdict is the one without it
    saved = decide(cases, handover=tf_text_handover(beside_ms=0.292))
    assert "wait_is_handover" not in saved.facts and "beside_step_fetch_ms" not in saved.facts
    assert (saved.bottleneck, saved.confidence, saved.headline) == (without.bottleneck, without.confidence,
                                                                   without.headline)
    assert saved.bottleneck == "input"
