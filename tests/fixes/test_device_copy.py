"""The device copy in line before each step, on scripted numbers: when an input verdict also gets
prefetch to the device (fixes.device_copy)."""

import pytest

from pipediag.analysis.handover import Handover
from pipediag.fixes.device_copy import copy_in_line_basis
from pipediag.fixes.recommend import recommend
from pipediag.verdict import thresholds as T
from pipediag.verdict.rules import decide
from tests.summaries import summary


def handover(fetch_ms=0.152, transfer_ms=0.576):
    total = fetch_ms + (transfer_ms or 0.0)
    return Handover(batches=407, ms_mean=total, ms_mean_ci=(total * 0.92, total * 1.08), fetch_ms_mean=fetch_ms,
                    fetch_ms_mean_ci=(fetch_ms * 0.87, fetch_ms * 1.13), transfer_ms_mean=transfer_ms,
                    batch_format="tf", transfer_text="tf.identity on /GPU:0 and sync_devices()" if transfer_ms
                    else "the step's framework (tensorflow) uses no accelerator here: there is no device copy")


def h200_case(pipeline_rate=344.8, input_rate=493.5):
    """tf_keras_input on the H200 (docs/gpu-validation.md, run 23): free step 693/s, training fed
    by the pipeline 345/s waiting 10% of the time, the pipeline alone 494/s, 12-MiB batches."""
    return {
        "synthetic": summary("synthetic", 693.0, gpu_util=23.0),
        "pipeline": summary("pipeline", pipeline_rate, wait=0.10, gpu_util=15.0),
        "input_only": summary("input_only", input_rate),
        "tuned": None,
    }


def fix_kinds(cases, ho, framework="tensorflow"):
    v = decide(cases, handover=ho)
    return v, [f.kind for f in recommend(v, cases, [], gpu_present=True, framework=framework).fixes]


def test_the_h200_case_gets_the_copy_made_ahead():
    v, kinds = fix_kinds(h200_case(), handover())
    assert v.bottleneck == "input"
    assert v.facts["transfer_ms"] == pytest.approx(0.576)
    assert v.facts["transfer_over_free_step"] == pytest.approx(0.576 * 693.0 / 1e3)
    assert kinds == ["device_prefetch"]
    fix = recommend(v, h200_case(), [], gpu_present=True, framework="tensorflow").fixes[0]
    assert fix.measured_speedup is None and fix.basis.startswith("not measured")
    assert "0.58 ms (0.40x the free step)" in fix.basis and "1/1.43" in fix.basis
    assert "prefetch_to_device('/gpu:0')" in fix.code


def test_written_for_the_steps_framework():
    v = decide(h200_case(), handover=handover())
    jax = recommend(v, h200_case(), [], gpu_present=True, framework="jax").fixes
    assert [f.kind for f in jax] == ["device_prefetch"] and "flax.jax_utils" in jax[0].code
    torch = recommend(v, h200_case(), [], gpu_present=True, framework="torch").fixes
    assert "pin_memory" in torch[0].code


def test_no_device_copy_no_advice():
    # The CPU machine: the hand-over makes no copy, so nothing is in line.
    _, kinds = fix_kinds(h200_case(), handover(transfer_ms=None))
    assert "device_prefetch" not in kinds


@pytest.mark.parametrize("transfer_ms, offered", [(0.40, True), (0.33, False)])
def test_the_copy_must_be_a_good_share_of_the_free_step(transfer_ms, offered):
    # the free step is 1.443 ms: 0.40 ms is 0.28x, 0.33 ms 0.23x, each side of DEVICE_COPY_SHARE
    assert (transfer_ms * 693.0 / 1e3 >= T.DEVICE_COPY_SHARE) == offered
    _, kinds = fix_kinds(h200_case(), handover(transfer_ms=transfer_ms))
    assert ("device_prefetch" in kinds) == offered


@pytest.mark.parametrize("input_rate, offered", [(420.0, True), (380.0, False), (355.0, False)])
def test_training_must_run_clearly_below_the_pipeline_alone(input_rate, offered):
    # 420 / 344.8 = 1.22x with intervals apart; 380 / 344.8 = 1.10x (below GAP_SIGNIFICANT);
    # 355: the pipeline alone is the limit, so hiding the copy would gain nothing.
    _, kinds = fix_kinds(h200_case(input_rate=input_rate), handover())
    assert ("device_prefetch" in kinds) == offered


def test_only_for_an_input_verdict():
    # A compute-bound step (no wait, fed at the free rate) with a large copy: nothing to hide it from.
    cases = {"synthetic": summary("synthetic", 693.0, gpu_util=96.0),
             "pipeline": summary("pipeline", 690.0, wait=0.01, gpu_util=96.0),
             "input_only": summary("input_only", 2000.0), "tuned": None}
    v = decide(cases, handover=handover())
    assert v.bottleneck != "input"
    assert copy_in_line_basis(v, cases["pipeline"], cases["input_only"]) is None
