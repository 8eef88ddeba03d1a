"""The ablation's bookkeeping on plain numbers: each change's own effect, left-outs, all-but runs."""

from dataclasses import replace

import pytest

from pipediag.analysis.ablation import (
    Ablation,
    VariantResult,
    classify,
    conclude,
    free_input_runs,
    left_out,
    needs_full_control,
    own_run,
    plan_all_but,
    plan_alone,
    runs_above_free,
    unsettled,
)
from pipediag.analysis.modes import Ratio

MAP = ("parallel_map@map", "parallel_map", "map(decode)")
PREFETCH = ("prefetch@batch", "prefetch", "batch(32)")
CACHE = ("cache@decode", "cache", "map(decode)")


def variant(role, keys, rate, rel=0.03, check_ok=True, error=None, ci=None, full_window=False):
    return VariantResult(
        name=f"{role} {keys}", role=role, changes=tuple(keys),
        batches_per_sec=rate,
        batches_per_sec_ci=ci if ci is not None else None if rate is None else (rate * (1 - rel), rate * (1 + rel)),
        steps=100, stop_reason="stable", check="checked" if check_ok else "DIFFER", check_ok=check_ok, error=error,
        full_window=full_window,
    )


BASE = 50.0, (48.5, 51.5)


def test_each_change_gets_its_own_speedup():
    variants = [
        variant("alone", [MAP[0]], 155.0),
        variant("alone", [PREFETCH[0]], 51.0),
        variant("together", [MAP[0], PREFETCH[0]], 170.0),
    ]
    a = conclude(*BASE, [MAP, PREFETCH], variants, window_s=3.0)
    parallel, prefetch = a.effect(MAP[0]), a.effect(PREFETCH[0])
    assert parallel.effect == "gain" and parallel.speedup == pytest.approx(3.1) and parallel.basis == "alone"
    assert prefetch.effect == "none" and prefetch.speedup == pytest.approx(1.02)
    assert a.together_speedup == pytest.approx(3.4)
    # With two changes, each alone run is the other's "all but" run.
    assert prefetch.without_speedup == pytest.approx(170 / 155)
    assert parallel.without_speedup == pytest.approx(170 / 51)
    assert left_out(a) == {}


def test_harmful_and_unsafe_changes_are_left_out():
    variants = [
        variant("alone", [MAP[0]], 120.0),
        variant("alone", [PREFETCH[0]], 40.0),
        variant("alone", [CACHE[0]], 300.0, check_ok=False),
    ]
    a = conclude(*BASE, [MAP, PREFETCH, CACHE], variants, window_s=3.0)
    assert [e.effect for e in a.effects] == ["gain", "harm", "unsafe"]
    out = left_out(a)
    assert set(out) == {PREFETCH[0], CACHE[0]}
    assert "0.80x, slower" in out[PREFETCH[0]]
    assert "DIFFER" in out[CACHE[0]]


def test_a_single_change_is_measured_by_the_together_run():
    a = conclude(*BASE, [MAP], [variant("together", [MAP[0]], 100.0)], window_s=3.0)
    e = a.effect(MAP[0])
    assert e.effect == "gain" and e.basis == "only change" and e.speedup == pytest.approx(2.0)


def test_a_single_change_is_measured_against_its_control_when_one_ran():
    # pipeline mode 50; the graph rebuilt unchanged 60 (the rebuild effect); that change alone 62
    variants = [variant("control", [], 60.0), variant("together", [MAP[0]], 62.0)]
    a = conclude(*BASE, [MAP], variants, window_s=8.0)
    e = a.effect(MAP[0])
    assert a.baseline_run == "control" and a.baseline_batches_per_sec == 60.0
    assert e.basis == "only change" and e.speedup == pytest.approx(62 / 60) and e.effect == "none"
    assert a.together_speedup == pytest.approx(62 / 60)


def test_unmeasured_when_a_variant_could_not_be_built_or_did_not_run():
    variants = [variant("alone", [CACHE[0]], None, error="filling it took over 20 s; stopped")]
    a = conclude(*BASE, [CACHE, MAP], variants, window_s=3.0)
    assert a.effect(CACHE[0]).effect == "unmeasured" and "20 s" in a.effect(CACHE[0]).reason
    assert a.effect(MAP[0]).effect == "unmeasured" and a.effect(MAP[0]).basis == "none"


def test_all_but_runs_measure_what_the_others_lose_without_a_change():
    keys = [MAP[0], PREFETCH[0], CACHE[0]]
    variants = [
        variant("alone", [MAP[0]], 100.0), variant("alone", [PREFETCH[0]], 52.0), variant("alone", [CACHE[0]], 60.0),
        variant("together", keys, 200.0),
        variant("all_but", [PREFETCH[0], CACHE[0]], 65.0),
        variant("all_but", [MAP[0], CACHE[0]], 150.0),
        variant("all_but", [MAP[0], PREFETCH[0]], 190.0),
    ]
    a = conclude(*BASE, [MAP, PREFETCH, CACHE], variants, window_s=3.0)
    assert a.effect(MAP[0]).without_speedup == pytest.approx(200 / 65)
    assert a.effect(PREFETCH[0]).without_speedup == pytest.approx(200 / 150)
    assert a.effect(CACHE[0]).without_speedup == pytest.approx(200 / 190)


def test_classify_needs_a_clear_and_large_enough_change():
    assert classify(Ratio(1.5, 1.2, 1.8)) == "gain"
    assert classify(Ratio(1.04, 1.01, 1.07)) == "none"  # significant but under 5%
    assert classify(Ratio(1.5, 0.9, 2.1)) == "none"  # intervals overlap
    assert classify(Ratio(0.7, 0.6, 0.8)) == "harm"
    assert classify(Ratio(0.97, 0.95, 0.99)) == "none"  # clearly slower, but by under 5%
    assert classify(None) == "unmeasured"


def test_which_runs_are_planned():
    assert plan_alone([]) == []  # the tuned run is the rebuilt graph itself
    assert plan_alone(["a"]) == [()]  # the control, then the tuned run: that change alone
    assert plan_alone(["a", "b"]) == [(), ("a",), ("b",), ()]  # the control before and after
    assert plan_all_but(["a", "b", "c"], thorough=False) == []
    assert plan_all_but(["a", "b"], thorough=True) == []  # the alone runs already are the all-but runs
    assert plan_all_but(["a", "b", "c"], thorough=True) == [("b", "c"), ("a", "c"), ("a", "b")]


def test_round_trip():
    variants = [variant("alone", [MAP[0]], 155.0), variant("alone", [PREFETCH[0]], 51.0),
                variant("together", [MAP[0], PREFETCH[0]], 170.0)]
    a = conclude(*BASE, [MAP, PREFETCH], variants, window_s=3.0)
    assert Ablation.from_dict(a.to_dict()) == a


def test_runs_are_compared_with_the_control_run_next_to_them():
    variants = [
        variant("control", [], 40.0),  # the machine got slower since pipeline mode (50)
        variant("alone", [MAP[0]], 80.0),
        variant("alone", [PREFETCH[0]], 40.5),
        variant("together", [MAP[0], PREFETCH[0]], 100.0),
    ]
    a = conclude(*BASE, [MAP, PREFETCH], variants, window_s=3.0)
    assert a.baseline_run == "control" and a.baseline_batches_per_sec == 40.0
    assert a.effect(MAP[0]).speedup == pytest.approx(2.0)  # not 80 / 50
    assert a.effect(PREFETCH[0]).effect == "none"  # not "harm", as 40.5 / 50 would say
    assert a.together_speedup == pytest.approx(2.5)  # 100 / 40 too
    assert a.to_dict()["baseline"]["run"] == "control"


def test_drift_between_the_two_control_runs_widens_every_interval():
    steady = [variant("control", [], 50.0), variant("alone", [MAP[0]], 56.0), variant("alone", [PREFETCH[0]], 50.0),
              variant("control", [], 50.5)]
    drifting = [variant("control", [], 50.0), variant("alone", [MAP[0]], 56.0), variant("alone", [PREFETCH[0]], 50.0),
                variant("control", [], 60.0)]  # the machine got faster during the ablation
    assert conclude(*BASE, [MAP, PREFETCH], steady, window_s=3.0).effect(MAP[0]).effect == "gain"
    a = conclude(*BASE, [MAP, PREFETCH], drifting, window_s=3.0)
    assert a.baseline_batches_per_sec == pytest.approx(55.0)
    assert a.baseline_ci == pytest.approx((50.0 * 0.97, 60.0 * 1.03))
    assert a.effect(MAP[0]).effect == "none"  # 56 vs a baseline somewhere in 48.5-61.8: not clear


# real/tf_load_images on the 2-core machine, 2026-12-04 05:22 (diagnose --json): two 3-s controls
# of a fed step that waits in bursts, the reduced decode and the cache alone, then together.
DECODE = ("decode_reduced@map", "decode_reduced", "parallel_map(process_path)")
LOAD_IMAGES = [
    variant("control", [], 9.97, ci=(7.29, 15.75)),
    variant("alone", [DECODE[0]], 9.94, ci=(7.50, 14.73)),
    variant("alone", [CACHE[0]], 14.82, ci=(13.55, 16.36)),
    variant("control", [], 10.89, ci=(7.94, 17.32)),
    variant("together", [DECODE[0], CACHE[0]], 13.01, ci=(12.36, 13.74)),
]


def test_a_gain_hidden_by_the_short_controls_asks_for_a_full_window_control():
    a = conclude(9.6, (8.0, 11.9), [DECODE, CACHE], LOAD_IMAGES, window_s=3.0)
    assert a.effect(CACHE[0]).effect == "none" and a.effect(CACHE[0]).speedup == pytest.approx(14.82 / 10.43, rel=1e-3)
    why = needs_full_control(a)
    assert why is not None and "cache ran 1.42x the control" in why and "7.3-17.3" in why


def test_the_full_window_control_alone_is_the_baseline_once_it_ran():
    full = variant("control", [], 10.2, ci=(9.5, 11.0), full_window=True)
    a = conclude(9.6, (8.0, 11.9), [DECODE, CACHE], LOAD_IMAGES + [full], window_s=3.0)
    assert a.baseline_batches_per_sec == 10.2 and a.baseline_ci == (9.5, 11.0)
    assert a.effect(CACHE[0]).effect == "gain"  # 13.55 / 11.0 > 1
    assert a.effect(DECODE[0]).effect == "none"  # its own run is the wide one
    assert needs_full_control(a) is None  # decided, or undecided for its own run's width


def test_no_full_window_control_where_it_could_not_decide_anything():
    # the changes' own runs are the wide ones: a longer control would not narrow their intervals
    wide_runs = [variant("control", [], 10.0, ci=(9.6, 10.4)), variant("alone", [CACHE[0]], 11.0, ci=(7.0, 16.0)),
                 variant("alone", [DECODE[0]], 10.1), variant("control", [], 10.1, ci=(9.7, 10.5)),
                 variant("together", [DECODE[0], CACHE[0]], 11.5, ci=(7.0, 17.0))]
    assert needs_full_control(conclude(9.6, (8.0, 11.9), [DECODE, CACHE], wide_runs, window_s=3.0)) is None
    # no promising gain at all: nothing to decide
    flat = [variant("control", [], 10.0, ci=(7.0, 15.0)), variant("alone", [CACHE[0]], 10.2),
            variant("alone", [DECODE[0]], 9.9), variant("together", [DECODE[0], CACHE[0]], 10.3)]
    assert needs_full_control(conclude(9.6, (8.0, 11.9), [DECODE, CACHE], flat, window_s=3.0)) is None
    # clear gains: decided already
    clear = [variant("control", [], 10.0, ci=(9.0, 11.0)), variant("alone", [CACHE[0]], 15.0),
             variant("alone", [DECODE[0]], 10.0), variant("together", [DECODE[0], CACHE[0]], 15.5)]
    assert needs_full_control(conclude(9.6, (8.0, 11.9), [DECODE, CACHE], clear, window_s=3.0)) is None
    # no control ran (an older saved diagnosis): pipeline mode is the baseline, nothing to re-run
    no_control = [v for v in LOAD_IMAGES if v.role != "control"]
    assert needs_full_control(conclude(9.6, (8.0, 11.9), [DECODE, CACHE], no_control, window_s=3.0)) is None


def test_a_saved_variant_without_the_full_window_flag_still_loads():
    d = LOAD_IMAGES[0].to_dict()
    del d["full_window"]
    assert VariantResult.from_dict(d).full_window is False


# tfds_builder on the 2-core machine, 2026-12-06 (accuracy run 23, diagnose --json): two short
# controls, the changes alone and together, then the control again with the full window, which
# ran apart from the two before it (the machine sped up, or the short windows read it slow).
PMAP = ("parallel_map@MapDataset/_25", "parallel_map", "map(augment)")
TFDS_CACHE = ("cache@PrefetchDataset/_22", "cache", "map(lookup_nest)")
TFDS_BUILDER = [
    variant("control", [], 80.52, ci=(73.48, 89.05)),
    variant("alone", [PMAP[0]], 89.14, ci=(83.82, 95.18)),
    variant("alone", [TFDS_CACHE[0]], 97.89, ci=(88.62, 109.34)),
    variant("control", [], 81.55, ci=(78.09, 85.34)),
    variant("together", [PMAP[0], TFDS_CACHE[0]], 100.39, ci=(94.99, 106.44)),
    variant("control", [], 99.68, ci=(91.61, 109.29), full_window=True),
]


def test_a_change_that_gains_against_one_control_run_only_is_unsettled_when_the_controls_ran_apart():
    a = conclude(88.3, (83.3, 93.9), [PMAP, TFDS_CACHE], TFDS_BUILDER, window_s=3.0)
    assert a.effect(TFDS_CACHE[0]).effect == "none"  # against the full-window control: 0.98x
    found = unsettled(a)
    assert [u.change for u in found] == [TFDS_CACHE[0]]  # parallel_map is no gain against any of them
    u = found[0]
    assert u.speedups == pytest.approx((97.89 / 80.52, 97.89 / 81.55, 97.89 / 99.68))
    assert u.control_rates == (80.52, 81.55, 99.68)


def test_nothing_is_unsettled_where_the_control_runs_agree_or_the_change_is_decided():
    # the same change and rates, but the full-window control within the short ones' intervals
    agree = TFDS_BUILDER[:-1] + [variant("control", [], 84.0, ci=(80.0, 88.0), full_window=True)]
    a = conclude(88.3, (83.3, 93.9), [PMAP, TFDS_CACHE], agree, window_s=3.0)
    assert unsettled(a) == []
    # controls apart, but every change decided (a gain or a harm): nothing is open
    decided = [variant("control", [], 50.0), variant("alone", [MAP[0]], 120.0), variant("alone", [PREFETCH[0]], 30.0),
               variant("control", [], 60.0)]
    a = conclude(*BASE, [MAP, PREFETCH], decided, window_s=3.0)
    assert [e.effect for e in a.effects] == ["gain", "harm"] and unsettled(a) == []
    # a single control run: nothing to disagree with
    single = [variant("control", [], 50.0), variant("together", [MAP[0]], 51.0)]
    assert unsettled(conclude(*BASE, [MAP], single, window_s=3.0)) == []


def test_a_single_change_is_unsettled_through_its_together_run():
    runs = [variant("control", [], 40.0, ci=(39.0, 41.0)), variant("together", [MAP[0]], 46.0, ci=(44.0, 48.0)),
            variant("control", [], 47.0, ci=(45.0, 49.0), full_window=True)]
    a = conclude(*BASE, [MAP], runs, window_s=3.0)
    assert a.effect(MAP[0]).basis == "only change" and a.effect(MAP[0]).effect == "none"
    assert [u.change for u in unsettled(a)] == [MAP[0]]


def test_the_runs_that_fed_the_step_faster_than_free_input_are_found_and_a_run_again_is_no_change():
    # real/tf_load_images, accuracy run 29 (2-core machine, 2026-12-06): the cache alone ran 20.9
    # batches/s, above the 17.8-19.9 of synthetic mode measured minutes before
    runs = [variant("control", [], 21.5, ci=(20.0, 23.0)),  # a control faster than free input is no change's
            variant("alone", [MAP[0]], 12.0), variant("alone", [CACHE[0]], 20.9, ci=(20.1, 21.8)),
            variant("alone", [PREFETCH[0]], None, error="could not be built"),
            variant("together", [MAP[0], CACHE[0]], 21.0, ci=(19.5, 22.4))]
    assert [v.changes for v in runs_above_free(runs, (17.8, 19.9))] == [(CACHE[0],)]
    assert [v.role for v in runs_above_free(runs, (10.0, 11.0))] == ["alone", "alone", "together"]
    assert runs_above_free(runs, None) == []  # no interval for synthetic mode: nothing to be above
    again = variant("free_input", [], 21.2, ci=(20.3, 22.1))
    a = conclude(*BASE, [MAP, CACHE], runs + [again], window_s=3.0)
    assert free_input_runs(a) == [again] and free_input_runs(None) == []
    # the run on synthetic data changes nothing of the ablation's own reading
    assert a == replace(conclude(*BASE, [MAP, CACHE], runs, window_s=3.0), variants=tuple(runs + [again]))


def test_a_changes_own_run_is_its_alone_run_else_a_together_run_of_it_alone():
    runs = [variant("control", [], 50.0), variant("alone", [MAP[0]], 60.0), variant("together", [MAP[0], CACHE[0]], 70.0)]
    assert own_run(runs, MAP[0]) is runs[1]
    assert own_run(runs, CACHE[0]) is None  # together applied it beside another change: not its own
    single = [variant("control", [], 50.0), variant("together", [CACHE[0]], 70.0)]
    assert own_run(single, CACHE[0]) is single[1] and own_run(single, MAP[0]) is None
