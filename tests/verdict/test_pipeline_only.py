"""The verdict from the pipeline mode alone (InputMonitor), on plain numbers."""

import pytest

from pipediag.verdict import thresholds as T
from pipediag.verdict.pipeline_only import CAVEAT, decide_pipeline_only
from tests.summaries import GiB, summary, waiting_cpu


def fit(rate=50.0, **kw):
    return summary("pipeline", rate, **kw)


@pytest.mark.parametrize("wait, bottleneck, confidence", [
    (T.INPUT_WAIT_HIGH + 0.01, "input", "medium"),
    (T.INPUT_WAIT_HIGH - 0.01, "input", "low"),
    (T.INPUT_WAIT_MODERATE + 0.01, "input", "low"),
    (T.INPUT_WAIT_MODERATE - 0.01, "compute", "low"),
])
def test_wait_thresholds(wait, bottleneck, confidence):
    v = decide_pipeline_only(fit(wait=wait))
    assert (v.bottleneck, v.confidence) == (bottleneck, confidence)
    assert v.evidence[-1] == CAVEAT  # always says what it could not see


def test_input_names_the_cpu_pattern_and_the_possible_gain():
    v = decide_pipeline_only(fit(wait=0.5, waiting=waiting_cpu([97, 3])))
    assert v.cpu_pattern.kind == "one_core"
    assert any("up to 2.00x faster" in e for e in v.evidence)


def test_gpu_idle_without_waiting_is_host_busy_is_compute():
    assert decide_pipeline_only(fit(wait=0.01, gpu_util=30.0)).bottleneck == "host"
    assert decide_pipeline_only(fit(wait=0.01, gpu_util=90.0)).bottleneck == "compute"
    assert decide_pipeline_only(fit(wait=0.01, gpu_util=90.0)).confidence == "medium"


def test_no_gpu_data_is_low_confidence_compute_and_says_why():
    v = decide_pipeline_only(fit(wait=0.0))
    assert (v.bottleneck, v.confidence) == ("compute", "low")
    assert any("no GPU data (NVML could not start)" in e for e in v.evidence)


def test_memory_and_too_few_steps_and_unmeasured_wait():
    assert decide_pipeline_only(fit(available=GiB // 2, total=24 * GiB)).bottleneck == "memory"
    assert decide_pipeline_only(fit(wait=0.01, gpu_util=90.0, gpu_mem=79 * GiB, gpu_total=80 * GiB)).bottleneck == "memory"
    few = decide_pipeline_only(fit(wait=0.5, steps=T.MIN_STEPS - 1))
    assert few.bottleneck == "inconclusive" and few.reason
    off = decide_pipeline_only(None, "steps_per_execution=4: ...")
    assert off.bottleneck == "inconclusive" and off.reason.startswith("steps_per_execution=4")


def test_waits_as_short_as_taking_a_batch_are_low_confidence():
    from pipediag.verdict.pipeline_only import SHORT_WAIT_MS

    # rate 50/s: 20 ms steps; 40% of them waiting is 8 ms a step. At 1000/s, 0.4 ms.
    assert decide_pipeline_only(fit(50.0, wait=0.4)).confidence == "medium"
    short = decide_pipeline_only(fit(1000.0, wait=0.4))
    assert 1000 / 1000.0 * 0.4 < SHORT_WAIT_MS and short.bottleneck == "input" and short.confidence == "low"
    assert any("each wait is short (0.40 ms median)" in e for e in short.evidence)


def test_noisy_rate_lowers_confidence():
    assert decide_pipeline_only(fit(wait=0.3, rel_ci=0.4)).confidence == "low"
