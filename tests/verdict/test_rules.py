"""The verdict rules on plain numbers, each threshold tested on both sides."""

from dataclasses import replace

import pytest

from pipediag.analysis.gpu import PeakMemory
from pipediag.analysis.modes import InputSideCpu
from pipediag.records.verdict import Verdict
from pipediag.verdict import thresholds as T
from pipediag.verdict.rules import classify_cpu, decide
from tests.summaries import GiB, oom_error, summary, waiting_cpu

NO_GPU = "NVML could not start"


def modes(synthetic, pipeline, input_only=None, tuned=None):
    return {"synthetic": synthetic, "pipeline": pipeline, "input_only": input_only, "tuned": tuned}


def test_input_bound_when_the_pipeline_alone_cannot_keep_up():
    v = decide(modes(summary("synthetic", 200), summary("pipeline", 50, wait=0.7), summary("input_only", 52)))
    assert v.bottleneck == "input" and v.confidence == "high"
    assert any("input alone (no step) 52.0 batches/s = 0.26x" in e for e in v.evidence)


@pytest.mark.parametrize("wait, expected", [(0.25, "input"), (0.19, "input"), (0.06, "input"), (0.04, "compute")])
def test_input_wait_thresholds(wait, expected):
    # Input alone is fast (no starvation), so only the wait share decides.
    v = decide(modes(summary("synthetic", 100), summary("pipeline", 100 * (1 - wait)), summary("input_only", 300))
               | {"pipeline": summary("pipeline", 100 * (1 - wait), wait=wait)})
    assert v.bottleneck == expected


def test_high_wait_is_high_confidence_moderate_wait_is_not():
    high = decide(modes(summary("synthetic", 100), summary("pipeline", 70, wait=T.INPUT_WAIT_HIGH + 0.05),
                        summary("input_only", 300)))
    moderate = decide(modes(summary("synthetic", 100), summary("pipeline", 93, wait=T.INPUT_WAIT_MODERATE + 0.02),
                            summary("input_only", 300)))
    assert high.confidence == "high" and high.headline.startswith("highly")
    assert moderate.confidence == "low" and moderate.headline.startswith("moderately")


def test_prefetch_hint_when_input_alone_is_fast_enough():
    v = decide(modes(summary("synthetic", 100), summary("pipeline", 60, wait=0.4), summary("input_only", 150)))
    assert any("not overlapped with the step (prefetch)" in e for e in v.evidence)


def test_compute_bound_without_gpu_says_it_cannot_tell_host_from_compute():
    v = decide(modes(summary("synthetic", 20, gpu_reason=NO_GPU), summary("pipeline", 19.8, wait=0.01),
                     summary("input_only", 400)))
    assert v.bottleneck == "compute"
    assert any("no GPU data (NVML could not start)" in e for e in v.evidence)


@pytest.mark.parametrize("util, expected", [(95.0, "compute"), (51.0, "compute"), (49.0, "host"), (8.0, "host")])
def test_gpu_busy_threshold_separates_host_from_compute(util, expected):
    v = decide(modes(summary("synthetic", 500, gpu_util=util), summary("pipeline", 498, wait=0.0),
                     summary("input_only", 5000)))
    assert v.bottleneck == expected


def test_real_oom_is_a_memory_verdict_with_the_error_text():
    synthetic = summary("synthetic", None, steps=0, stop="out_of_memory", error=oom_error())
    v = decide(modes(synthetic, None, summary("input_only", 100)))
    assert v.bottleneck == "memory" and v.confidence == "high"
    assert "OOM when allocating" in v.evidence[0]


def test_host_memory_pressure_is_memory():
    pipeline = summary("pipeline", 50, wait=0.5, available=int(0.04 * 24 * GiB))
    v = decide(modes(summary("synthetic", 100), pipeline, summary("input_only", 60)))
    assert v.bottleneck == "memory"
    pipeline = summary("pipeline", 50, wait=0.5, available=int(0.06 * 24 * GiB))
    assert decide(modes(summary("synthetic", 100), pipeline, summary("input_only", 60))).bottleneck == "input"


MiB = 2**20


def shuffle(elements, kib):
    from pipediag.analysis.buffers import BufferEstimate

    return BufferEstimate(f"shuffle({elements})", 2, elements, kib * 2**10)


def fed(rss):
    """An input-bound run (by speed) whose process peaked at `rss` bytes."""
    return modes(summary("synthetic", 200, rss=rss), summary("pipeline", 50, wait=0.7, rss=rss),
                 summary("input_only", 52, rss=rss))


def test_shuffle_buffers_over_the_ram_budget_are_memory_naming_the_buffer():
    v = decide(fed(rss=int(1.6 * GiB)), buffers=[shuffle(10922, 96)], ram_budget_bytes=512 * MiB)
    assert v.bottleneck == "memory" and v.confidence == "high" and v.stage == "shuffle(10922)"
    assert v.headline == "host memory: `shuffle(10922)` alone holds more than the RAM budget (--ram-budget-mb) allows"
    assert "10922 elements x 96 KiB" in v.evidence[0] and "2.0x the RAM budget" in v.evidence[1]
    assert v.facts["memory_source"] == "pipeline_buffers" and v.facts["ram_budget_bytes"] == 512 * MiB
    assert Verdict.from_dict(v.to_dict()) == v


@pytest.mark.parametrize("kib, expected", [(47, "input"), (48, "input"), (49, "memory")])
def test_the_budget_itself_is_the_line(kib, expected):
    # 10922 x 48 KiB = 511.9 MiB: just within 512 MiB; 49 KiB: just over.
    v = decide(fed(rss=int(1.6 * GiB)), buffers=[shuffle(10922, kib)], ram_budget_bytes=512 * MiB)
    assert v.bottleneck == expected


def test_buffers_add_up_and_the_biggest_is_named():
    v = decide(fed(rss=GiB), buffers=[shuffle(1000, 300), shuffle(100, 300)], ram_budget_bytes=300 * MiB)
    assert v.bottleneck == "memory" and v.stage == "shuffle(1000)"
    assert v.headline.startswith("host memory: the shuffle buffers (most in `shuffle(1000)`) hold more")


def test_rss_sets_how_sure_the_buffer_verdict_is():
    within = decide(fed(rss=400 * MiB), buffers=[shuffle(10922, 96)], ram_budget_bytes=512 * MiB)
    assert within.confidence == "low" and "disagree" in within.evidence[-1]
    unread = decide(fed(rss=None), buffers=[shuffle(10922, 96)], ram_budget_bytes=512 * MiB)
    assert unread.confidence == "medium"


def test_without_a_budget_the_hosts_memory_is_the_line():
    small = decide(fed(rss=2 * GiB), buffers=[shuffle(10922, 96)])
    assert small.bottleneck == "input"  # 1 GiB of a 24 GiB host
    huge = decide(fed(rss=2 * GiB), buffers=[shuffle(300_000, 96)])
    assert huge.bottleneck == "memory" and "this host's memory" in huge.headline
    assert huge.facts["ram_budget_source"] == "host_total"


def test_gpu_memory_nearly_full_is_memory_with_low_confidence():
    total = 80 * GiB
    full = summary("synthetic", 100, gpu_util=99, gpu_mem=int(0.96 * total), gpu_total=total)
    v = decide(modes(full, summary("pipeline", 99), summary("input_only", 500)))
    assert v.bottleneck == "memory" and v.confidence == "low"
    roomy = summary("synthetic", 100, gpu_util=99, gpu_mem=int(0.90 * total), gpu_total=total)
    assert decide(modes(roomy, summary("pipeline", 99), summary("input_only", 500))).bottleneck == "compute"


@pytest.mark.parametrize("peak_frac, expected", [(0.96, "memory"), (0.94, "compute")])
def test_the_steps_own_peak_against_its_frameworks_limit_decides_when_known(peak_frac, expected):
    # JAX preallocated 75% of the card: NVML's device reading says nothing about use. Its own peak does.
    total, limit = 80 * GiB, 60 * GiB
    synthetic = replace(summary("synthetic", 100, gpu_util=99, gpu_mem=int(0.75 * total), gpu_total=total),
                        peak_memory=PeakMemory(int(peak_frac * limit), "jax Device.memory_stats()", "mode", limit))
    v = decide(modes(synthetic, summary("pipeline", 99), summary("input_only", 500)))
    assert v.bottleneck == expected
    if expected == "memory":
        assert v.confidence == "medium"
        assert any("of the 60.0 GiB it may use (jax Device.memory_stats())" in e for e in v.evidence)


def test_preallocation_seen_by_nvml_is_not_called_full_when_the_framework_says_otherwise():
    total = 80 * GiB
    synthetic = replace(summary("synthetic", 100, gpu_util=99, gpu_mem=int(0.97 * total), gpu_total=total),
                        peak_memory=PeakMemory(2 * GiB, "jax Device.memory_stats()", "mode", int(0.95 * total)))
    assert decide(modes(synthetic, summary("pipeline", 99), summary("input_only", 500))).bottleneck == "compute"


def test_too_few_steps_is_inconclusive_with_the_reason():
    v = decide(modes(summary("synthetic", 100), summary("pipeline", 1, steps=T.MIN_STEPS - 1, wait=0.9)))
    assert v.bottleneck == "inconclusive"
    assert "too few steps in pipeline mode" in v.reason


def test_noise_lowers_confidence():
    quiet = decide(modes(summary("synthetic", 20), summary("pipeline", 19.9), summary("input_only", 400)))
    noisy = decide(modes(summary("synthetic", 20, rel_ci=0.4), summary("pipeline", 19.9, rel_ci=0.4),
                         summary("input_only", 400)))
    assert quiet.confidence == "high" and noisy.confidence == "low"


def test_contention_is_input_bound_even_without_waiting():
    synthetic = summary("synthetic", 100, compute_ms=10.0)
    pipeline = summary("pipeline", 70, wait=0.01, compute_ms=14.0, per_core=[95, 97])
    v = decide(modes(synthetic, pipeline, summary("input_only", 200)))
    assert v.bottleneck == "input"
    assert any("competes with it for the CPU" in e for e in v.evidence)


def test_a_slower_step_beside_idle_cores_is_not_contention():
    # The H200's host scenario: the step 1.22x slower beside the pipeline with 14 of 16 cores idle
    # (its own speed varied). Not input; the step's verdict stands, with lowered confidence.
    synthetic = summary("synthetic", 61.3, compute_ms=16.2, gpu_util=6.0)
    pipeline = summary("pipeline", 49.8, wait=0.03, compute_ms=19.8, per_core=[100, 60] + [5] * 14)
    v = decide(modes(synthetic, pipeline, summary("input_only", 7000)), gpu_expected=True)
    assert (v.bottleneck, v.confidence) == ("host", "low")
    assert any("cores were idle: not CPU contention" in e for e in v.evidence)


@pytest.mark.parametrize(
    "per_core, kind",
    [([95, 90], "saturated"), ([100, 5], "one_core"), ([50, 48], "one_core"), ([10, 12], "idle"), ([85, 70], "partial"),
     ([100, 100, 95, 90], "saturated"), ([100, 5, 3, 2], "one_core")],
)
def test_cpu_patterns(per_core, kind):
    pattern = classify_cpu(InputSideCpu(waiting_cpu(per_core), "while the step waited"))
    assert pattern.kind == kind
    assert " ".join(f"{v}%" for v in per_core) in pattern.text


def test_idle_pattern_names_iowait_when_there_is_some():
    pattern = classify_cpu(InputSideCpu(waiting_cpu([5, 6], iowait=35.0), "while the step waited"))
    assert "iowait 35%" in pattern.text


def test_short_waits_fall_back_to_the_input_only_cpu_picture():
    mixed = waiting_cpu([80, 70], purity=0.3)
    pipeline = summary("pipeline", 50, wait=0.3, waiting=mixed)
    input_only = summary("input_only", 55, per_core=[100, 8])
    v = decide(modes(summary("synthetic", 200), pipeline, input_only))
    assert v.cpu_pattern.kind == "one_core"
    assert "while the pipeline ran alone (input_only mode)" in v.cpu_pattern.text


def test_cpu_pattern_counts_this_process_not_other_programs():
    # System-wide both cores are full, but this process uses one core: a serial stage, and the
    # rest is someone else's load, which the text names.
    pattern = classify_cpu(InputSideCpu(waiting_cpu([100, 100], process=100.0), "while the step waited"))
    assert pattern.kind == "one_core"
    assert "other processes 1.0" in pattern.text


def test_other_load_on_the_machine_lowers_confidence_and_says_so():
    busy = dict(per_core=[100, 100], process=80.0)  # this process: 0.8 cores of the 2.0 busy
    quiet = decide(modes(summary("synthetic", 20), summary("pipeline", 19.9), summary("input_only", 400)))
    v = decide(modes(summary("synthetic", 20, **busy), summary("pipeline", 19.9, **busy), summary("input_only", 400)))
    assert quiet.confidence == "high" and v.confidence == "low"
    assert any("other processes kept 1.2 cores busy" in e for e in v.evidence)


def test_other_load_beside_idle_cores_is_not_contention():
    # 16 cores: this process 1.5 cores, others 0.6, 13.9 idle (the H200 host during a compute run).
    roomy = dict(per_core=[100, 100, 10] + [0] * 13, process=150.0)
    v = decide(modes(summary("synthetic", 20, **roomy), summary("pipeline", 19.9, **roomy), summary("input_only", 400)))
    assert v.confidence == "high" and not any("other processes" in e for e in v.evidence)


# -- GPM: how much of the chip worked while NVML called it busy --------------------------------

def gpm_modes(util, **gpm):
    return modes(summary("synthetic", 500, gpu_util=util, gpm=gpm), summary("pipeline", 498, wait=0.0),
                 summary("input_only", 5000))


@pytest.mark.parametrize("sm_active", [24.0, 26.0])
def test_busy_but_barely_working_is_host_on_both_sides_of_the_threshold(sm_active):
    # NVML: busy all the time. GPM: about a quarter of the SMs had work while it was. Under 25%: the
    # small-kernel rule; just over: SM activity under DCGM's 50% with no pipe busy, host all the same.
    v = decide(gpm_modes(100.0, sm_active_pct=sm_active, tensor_active_pct=5.0, dram_bw_pct=5.0))
    assert v.bottleneck == "host" and v.facts["gpu_limit"] == "small_kernels"
    assert abs(v.facts["sm_active_while_busy_pct"] - sm_active) < 1e-9
    if sm_active < 25:
        assert "busy but barely working" in v.headline and v.confidence == "high"
        assert any("only 24% of the SMs had work" in e for e in v.evidence)
    else:
        assert v.facts["gpu_underused"] is True and v.confidence == "medium"


def test_sm_activity_is_judged_against_the_time_the_gpu_was_busy():
    # 20% SM activity over a GPU busy 60% of the time: a third of the SMs while busy. Not "barely".
    v = decide(gpm_modes(60.0, sm_active_pct=20.0, tensor_active_pct=40.0))
    assert v.bottleneck == "compute"
    assert abs(v.facts["sm_active_while_busy_pct"] - 100 * 20 / 60) < 1e-9


def test_a_step_that_leaves_most_sms_idle_with_nothing_busy_is_host_with_lowered_confidence():
    # The H200's small_kernels scenario in one run: NVML busy 59%, GPM SM activity 18% (31% while
    # busy: above the small-kernel line), no pipe or DRAM busy. Nothing on the chip limits it: host,
    # as the same step reads under NVML's 50% line, but not confidently.
    v = decide(gpm_modes(59.0, sm_active_pct=18.0, tensor_active_pct=0.1, fp32_active_pct=0.2, dram_bw_pct=0.0))
    assert (v.bottleneck, v.confidence) == ("host", "medium")
    assert v.facts["gpu_underused"] is True and v.facts["gpu_limit"] == "small_kernels"
    # continuous at NVML's line: just under it and just over it, the same bottleneck
    under = decide(gpm_modes(49.0, sm_active_pct=15.0, tensor_active_pct=0.1, fp32_active_pct=0.2, dram_bw_pct=0.0))
    over = decide(gpm_modes(51.0, sm_active_pct=15.6, tensor_active_pct=0.1, fp32_active_pct=0.2, dram_bw_pct=0.0))
    assert under.bottleneck == over.bottleneck == "host"
    assert any("SMs worked only 18% of the time" in e for e in v.evidence)
    from pipediag.fixes.recommend import recommend

    kinds = [f.kind for f in recommend(v, {}, [], gpu_present=True, framework="jax").fixes]
    assert kinds == ["batch_size", "xla"]  # not mixed precision: the tensor cores were not the limit
    # Half the SMs at work, or a busy pipe: the plain compute verdict, confident.
    assert decide(gpm_modes(98.0, sm_active_pct=50.0, tensor_active_pct=1.0)).confidence == "high"
    assert "gpu_underused" not in decide(gpm_modes(59.0, sm_active_pct=18.0, tensor_active_pct=40.0)).facts


@pytest.mark.parametrize("dram, math, limit", [
    (80.0, 10.0, "memory_bandwidth"), (51.0, 10.0, "memory_bandwidth"), (49.0, 10.0, None),
    (80.0, 29.0, "memory_bandwidth"), (80.0, 31.0, "math"),
])
def test_dram_bandwidth_high_with_idle_math_is_memory_bandwidth_bound(dram, math, limit):
    v = decide(gpm_modes(98.0, sm_active_pct=95.0, tensor_active_pct=math, fp32_active_pct=math / 2, dram_bw_pct=dram))
    assert v.bottleneck == "compute"
    assert v.facts.get("gpu_limit") == limit
    if limit == "memory_bandwidth":
        assert "memory-bandwidth-bound" in v.headline
        assert any(f"DRAM bandwidth at {dram:.0f}% of peak" in e for e in v.evidence)


def test_the_busiest_arithmetic_pipe_counts_not_only_tensor_cores():
    # An FP32 step: tensor cores idle, FP32 pipe busy. Not memory-bound.
    v = decide(gpm_modes(98.0, sm_active_pct=95.0, tensor_active_pct=0.0, fp32_active_pct=70.0, dram_bw_pct=60.0))
    assert v.facts["gpu_limit"] == "math"


def test_idle_gpu_is_host_and_quotes_gpm_too():
    v = decide(gpm_modes(20.0, sm_active_pct=3.0, tensor_active_pct=1.0, dram_bw_pct=1.0))
    assert v.bottleneck == "host" and "mostly idle" in v.headline
    assert any(e.startswith("GPM in synthetic mode (30 samples): SM activity 3%") for e in v.evidence)


def test_without_gpm_the_evidence_says_what_is_unknown():
    v = decide(modes(summary("synthetic", 500, gpu_util=97.0, gpm_reason="GPM is not supported on this GPU"),
                     summary("pipeline", 498), summary("input_only", 5000)))
    assert v.bottleneck == "compute" and "gpu_limit" not in v.facts
    assert any(e.startswith("no GPM (GPM is not supported on this GPU)") for e in v.evidence)


# -- readings on a threshold: no silent flip ---------------------------------------------------

def contention_modes(step_ms, step_ci, gap_rel_ci=0.03):
    from dataclasses import replace

    synthetic = replace(summary("synthetic", 27.8, compute_ms=36.0, rel_ci=gap_rel_ci), compute_ms_median_ci=(35.5, 36.5))
    pipeline = replace(summary("pipeline", 22.2, wait=0.01, compute_ms=step_ms, per_core=[95, 97], rel_ci=gap_rel_ci),
                       compute_ms_median_ci=step_ci)
    return modes(synthetic, pipeline, summary("input_only", 600))


def test_contention_clear_of_its_line_is_input_bound_and_lists_its_readings():
    v = decide(contention_modes(48.0, (46.0, 50.0)))
    assert (v.bottleneck, v.confidence) == ("input", "medium")
    assert [e["straddles"] for e in v.facts["edges"]] == [False, False]


def test_contention_within_its_spread_of_the_line_is_not_called_and_says_how_close():
    # issue 13 item 5: the step 42 ms beside a cached pipeline vs 36 ms alone, gap 1.25x: input in
    # one run, compute in two. With the step's interval across 1.15x the verdict does not flip to input.
    v = decide(contention_modes(42.0, (39.0, 45.0)))
    assert v.bottleneck == "compute" and v.confidence == "low"
    text = next(e for e in v.evidence if "CPU contention is called" in e)
    assert "the step's own time beside the pipeline over alone 1.17x (95%: 1.07-1.27x), above the 1.15x line by 1%" in text
    assert "not decided on it; confidence lowered" in text
    assert [e["straddles"] for e in v.facts["edges"]] == [False, True]


def light_contention_modes(pipeline_rate, step_ms, step_ci, rel_ci=0.08):
    """A contention reading fed by a pipeline that barely runs: input alone 600 batches/s on 1.9
    cores, so about 0.07-0.08 cores at the fed rate, taken from the step's 1.8 cores: at most 1.05x."""
    from dataclasses import replace

    synthetic = replace(summary("synthetic", 27.8, compute_ms=36.0, rel_ci=rel_ci, per_core=[95, 90], process=180.0),
                        compute_ms_median_ci=(35.5, 36.5))
    pipeline = replace(summary("pipeline", pipeline_rate, wait=0.01, compute_ms=step_ms, per_core=[95, 97],
                               process=185.0, rel_ci=rel_ci), compute_ms_median_ci=step_ci)
    return modes(synthetic, pipeline, summary("input_only", 600, per_core=[95, 95], process=190.0))


def test_a_reading_on_the_contention_line_is_settled_by_a_pipeline_too_light_to_reach_it():
    # real/kerasio_image_classification_from_scratch, 2026-12-04: the fed step 1.10x (0.91-1.32x)
    # and the step itself 1.04x (0.95-1.29x) beside a pipeline at 0.12 cores of the step's 1.9:
    # measured again for 34 s, and every outcome of that run read compute.
    v = decide(light_contention_modes(25.3, 40.0, (34.0, 46.0)))
    assert (v.bottleneck, v.confidence) == ("compute", "high")
    assert "edges" not in v.facts  # nothing for diagnose to measure again
    assert v.facts["pipeline_cores_at_fed_rate"] == pytest.approx(1.9 * 25.3 / 600)
    text = next(e for e in v.evidence if "the pipeline barely ran" in e)
    assert "the fed step's slowdown (synthetic over pipeline rate) 1.10x" in text
    assert "the step's own time beside the pipeline over alone 1.11x" in text
    assert "by at most 1.05x, under the line: not contention" in text and "not measured again" in text


def test_a_slowdown_at_or_over_the_line_beside_a_light_pipeline_lowers_confidence_unmeasured():
    # Both readings above the line but straddling it: the step was slower by the line's margin,
    # which the pipeline cannot have taken: its speed varied, as when the readings are clear.
    v = decide(light_contention_modes(22.2, 42.0, (39.0, 45.0)))
    assert (v.bottleneck, v.confidence) == ("compute", "low")
    assert "edges" not in v.facts
    assert any("the pipeline barely ran" in e and "confidence is lowered" in e for e in v.evidence)


def test_a_reading_on_the_line_beside_a_pipeline_heavy_enough_is_still_measured_again():
    from dataclasses import replace

    heavy = light_contention_modes(25.3, 40.0, (34.0, 46.0))
    heavy["input_only"] = replace(heavy["input_only"], batches_per_sec=30.0, batches_per_sec_ci=(29.0, 31.0))
    v = decide(heavy)  # 1.9 cores at 30/s: 1.6 cores at the fed rate, no bound under the line
    assert "pipeline_cores_at_fed_rate" not in v.facts
    assert any(e["straddles"] for e in v.facts["edges"])


def test_a_step_clearly_under_the_contention_line_leaves_the_verdict_alone():
    v = decide(contention_modes(37.0, (36.5, 37.5)))
    assert (v.bottleneck, v.confidence) == ("compute", "high") and "edges" not in v.facts


def test_a_compute_verdict_says_when_the_input_side_has_nothing_left_to_change():
    from pipediag.verdict.rules import nothing_left_to_change

    v = decide(contention_modes(37.0, (36.5, 37.5)))
    left_out = [("cache", "map(decode)", "the pipeline already caches there (cache right after map(decode))"),
                ("prefetch", "prefetch(AUTOTUNE)", "the pipeline already ends with prefetch"),
                ("threading", None, "the CPUs were busy while the step waited: more threads than cores would not help")]
    said = nothing_left_to_change(v, left_out, candidates=0)
    assert said.evidence[-1] == (
        "no input-side change left to make: pipediag's tuning rules found nothing to change in the pipeline (cache at "
        "`map(decode)`: the pipeline already caches there (cache right after map(decode)); prefetch at "
        "`prefetch(AUTOTUNE)`: the pipeline already ends with prefetch)")
    assert nothing_left_to_change(v, left_out, candidates=1) is v  # something was left to try
    assert nothing_left_to_change(v, left_out, candidates=None) is v  # no tuning planned
    assert nothing_left_to_change(decide(contention_modes(48.0, (46.0, 50.0))), left_out, candidates=0).bottleneck == "input"


def gpu_edge_modes(util, util_ci, sm_active, sm_ci):
    from dataclasses import replace

    synthetic = summary("synthetic", 500, gpu_util=util, gpm={"sm_active_pct": sm_active})
    window = replace(synthetic.gpu, util_pct_ci=util_ci, gpm=replace(synthetic.gpu.gpm, sm_active_pct_ci=sm_ci))
    return modes(replace(synthetic, gpu=window), summary("pipeline", 498, wait=0.0), summary("input_only", 5000))


def test_small_kernels_within_the_spread_of_their_line_say_how_close_and_lower_confidence():
    # issue 14: gpu_validation read small_kernels as host in one run and compute in the next
    v = decide(gpu_edge_modes(90.0, (88.0, 92.0), 21.0, (17.0, 25.0)), gpu_expected=True)
    assert (v.bottleneck, v.confidence, v.facts["gpu_limit"]) == ("host", "medium", "small_kernels")
    line = next(e for e in v.evidence if "within its spread of the line" in e)
    assert line.startswith("SMs with work while the GPU was busy 23.33% (95%: 18.48-28.41%), below the 25.00% line by 7%")
    assert [e["rule"] for e in v.facts["edges"]] == ["small_kernels"]


def test_gpu_readings_clear_of_their_lines_keep_full_confidence():
    v = decide(gpu_edge_modes(90.0, (88.0, 92.0), 12.0, (10.0, 14.0)), gpu_expected=True)
    assert (v.bottleneck, v.confidence) == ("host", "high") and "edges" not in v.facts
    busy_line = decide(gpu_edge_modes(52.0, (45.0, 58.0), 45.0, (43.0, 47.0)), gpu_expected=True)
    # on the busy line with 45% SM activity and no pipe reading: host on either side of it now
    assert busy_line.bottleneck == "host" and busy_line.facts["edges"][0]["rule"] == "host"


def test_a_step_faster_beside_the_pipeline_is_not_near_contention_however_wide_its_interval():
    # compute_bound on the loaded 2-core machine: gap 1.09x (0.57-1.90), the step 0.90x (0.64-1.40)
    from dataclasses import replace

    synthetic = replace(summary("synthetic", 6.3, compute_ms=143.0, rel_ci=0.3), compute_ms_median_ci=(120.0, 170.0))
    pipeline = replace(summary("pipeline", 5.8, compute_ms=128.0, rel_ci=0.3, per_core=[95, 97]),
                       compute_ms_median_ci=(108.0, 168.0))
    v = decide(modes(synthetic, pipeline, summary("input_only", 1780)))
    assert v.bottleneck == "compute" and "edges" not in v.facts


def switched_modes(fast_share=0.38, input_only_rate=57.4, input_only_process=100.0, pipeline_rate=25.3):
    """real/kerasio_timeseries, 2026-12-04 19:38: the free step ran 22.7-ms and 36.4-ms stretches,
    mostly slow, so its median (35.7 ms) and rate (31.8/s) come from the slow ones; the fed step
    took 35.4 ms (0.99x), at 25.3/s (1.26x), beside a pipeline of about one core alone."""
    from pipediag.analysis.regimes import Regimes

    regimes = Regimes(fast_ms=22.7, slow_ms=36.4, fast_share=fast_share, fast_per_sec=41.7, stretches=6,
                      separation=11.1)
    synthetic = replace(summary("synthetic", 31.8, compute_ms=35.74, per_core=[86, 87], process=170.0),
                        compute_ms_median_ci=(35.35, 35.96), regimes=regimes)
    pipeline = replace(summary("pipeline", pipeline_rate, wait=0.02, compute_ms=35.4, per_core=[90, 90], process=175.0),
                       compute_ms_median_ci=(35.0, 35.9))
    return modes(synthetic, pipeline, summary("input_only", input_only_rate, per_core=[60, 60],
                                              process=input_only_process))


def test_a_free_step_mostly_in_its_slow_stretches_lowers_a_compute_verdict_and_says_why():
    v = decide(switched_modes())
    assert (v.bottleneck, v.confidence) == ("compute", "low")
    assert v.facts["free_step_regimes"]["fast_per_sec"] == 41.7  # diagnose measures the modes again
    text = next(e for e in v.evidence if "ran at two speeds" in e)
    assert "22.70 ms per step for 38% of its steps and 36.40 ms (1.60x slower) for the rest, in 6 stretches" in text
    assert "at the fast stretches' 41.7 steps/s, the fed step (25.3 batches/s) would be 1.65x slower" in text
    assert text.endswith("so the input side may be the limit: confidence lowered")


def test_input_alone_slower_than_the_fast_stretches_is_reason_enough():
    v = decide(switched_modes(input_only_rate=39.0, pipeline_rate=38.0))  # fed 1.10x under the fast rate
    assert (v.bottleneck, v.confidence) == ("compute", "low")
    assert "input alone (39.0 batches/s) would not keep up with it" in next(e for e in v.evidence if "two speeds" in e)


@pytest.mark.parametrize("changes", [
    {"fast_share": 0.62},  # mostly fast: the median is the fast speed already
    {"input_only_rate": 600.0, "input_only_process": 190.0},  # ~0.08 cores at the fed rate: too light to slow it
    {"pipeline_rate": 37.0},  # fed 1.13x under the fast rate, and input alone keeps up with it
])
def test_two_speeds_that_cannot_change_the_verdict_leave_it_alone(changes):
    v = decide(switched_modes(**changes))
    assert (v.bottleneck, v.confidence) == ("compute", "high")
    assert "free_step_regimes" not in v.facts and not any("two speeds" in e for e in v.evidence)


def slower_alone_modes(free_ci=(35.8, 36.5), fed_ci=(30.46, 31.69), input_only_rate=57.0, input_only_process=100.0):
    """real/kerasio_timeseries, 2026-12-04 21:01: synthetic mode ran 36.2 ms a step throughout (one
    speed, the slow one) and pipeline mode 31.2 ms, faster than "free": compute (high), where the
    scenario is input-bound through contention."""
    synthetic = replace(summary("synthetic", 28.9, compute_ms=36.2, per_core=[86, 87], process=170.0),
                        compute_ms_median_ci=free_ci)
    pipeline = replace(summary("pipeline", 29.6, wait=0.02, compute_ms=31.23, per_core=[90, 90], process=175.0),
                       compute_ms_median_ci=fed_ci)
    return modes(synthetic, pipeline, summary("input_only", input_only_rate, per_core=[60, 60],
                                              process=input_only_process))


def test_a_step_clearly_faster_beside_the_pipeline_than_alone_lowers_a_compute_verdict():
    v = decide(slower_alone_modes())
    assert (v.bottleneck, v.confidence) == ("compute", "low")
    assert v.facts["free_step_slower_than_fed"]["ratio"] == pytest.approx(36.2 / 31.23)
    text = next(e for e in v.evidence if "slower stretch of the machine" in e)
    assert text.startswith("the step itself took 31.23 ms beside the pipeline and 36.20 ms alone (1.16x slower alone")
    assert "at the fed step's own 32.0 steps/s, the pipeline (0.52 cores at the fed rate) is heavy enough" in text


@pytest.mark.parametrize("changes", [
    {"fed_ci": (30.0, 36.0)},  # the intervals overlap: not clearly faster fed
    {"input_only_rate": 600.0, "input_only_process": 190.0},  # too light to slow it, and input alone keeps up
])
def test_a_fed_step_not_clearly_faster_or_a_pipeline_that_cannot_matter_leaves_the_verdict(changes):
    v = decide(slower_alone_modes(**changes))
    assert (v.bottleneck, v.confidence) == ("compute", "high") and "free_step_slower_than_fed" not in v.facts


def test_input_alone_slower_than_the_fed_steps_own_speed_is_reason_enough():
    v = decide(slower_alone_modes(input_only_rate=31.0, input_only_process=190.0))
    assert (v.bottleneck, v.confidence) == ("compute", "low")
    assert "input alone (31.0 batches/s) would not keep up with it" in next(
        e for e in v.evidence if "slower stretch" in e)
