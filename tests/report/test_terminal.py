"""The terminal report rendered to an in-memory console of fixed width."""

from rich.console import Console

from pipediag.fixes.recommend import Fix
from pipediag.records.change import Change
from pipediag.records.verdict import Verdict
from pipediag.report.terminal.diagnose import modes_table, render_diagnosis
from tests.summaries import diagnosis


def text(renderable, width=100):
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    console.print(renderable)
    return console.export_text()


VERDICT = Verdict("input", "high", "input-bound: the pipeline alone delivers fewer batches than the step could take",
                  ("the step waited for input 70% of the time in pipeline mode",))
FIX = Fix("parallel_map", "map(decode_example)", "Run `map(decode_example)` in parallel: it runs on one core",
          "ds = ds.map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)", 3.0, (2.5, 3.5),
          "measured: the tuned pipeline ran 3.00x the original")


def test_modes_table_rows():
    out = text(modes_table(diagnosis()))
    lines = [line for line in out.splitlines() if line.startswith(("│synthetic", "│pipeline", "│input_only", "│tuned"))]
    assert lines[0].split("│")[1:4] == ["synthetic  ", "     200.0 ", "  6.0 "]
    assert "70%" in lines[1]
    assert "GPU n/a: NVML could not start" in out
    assert "first step (tracing, compiling) 500 ms" in out


def test_full_report_shows_verdict_evidence_fixes_and_pipeline():
    d = diagnosis(verdict=VERDICT, fixes=[FIX],
                  tuning=[Change("parallel_map", "map(decode_example)", "n", "map(decode_example): parallel", True),
                          Change("threading", None, None, "threadpool 32", False, reason="CPUs were busy")])
    out = text(render_diagnosis(d))
    assert "pipeline: TensorSliceDataset → map(decode_example) → batch(16)" in out
    assert "INPUT  (confidence: high)" in out
    assert "• the step waited for input 70% of the time in pipeline mode" in out
    assert "1. Run `map(decode_example)` in parallel: it runs on one core" in out
    assert "×3.00 measured: the tuned pipeline ran 3.00x the original" in out
    assert "ds = ds.map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)" in out
    assert "[applied] map(decode_example): parallel" in out
    assert "[left out] threadpool 32 — CPUs were busy" in out


def test_interrupted_report_says_partial():
    out = text(render_diagnosis(diagnosis(status="interrupted", verdict=VERDICT)))
    assert "[INTERRUPTED: partial report]" in out


def test_no_fix_says_so():
    out = text(render_diagnosis(diagnosis(verdict=Verdict("compute", "high", "compute-bound", ()))))
    assert "No fix recommended" in out


# -- the GPU side of the report --------------------------------------------------------------

def gpu_diagnosis(**samples_kw):
    from dataclasses import replace

    from pipediag.analysis.gpu import PeakMemory
    from pipediag.records.readings import SampleLog
    from tests.summaries import summary

    synthetic = replace(summary("synthetic", 200.0, gpu_util=97.0,
                                gpm=dict(sm_active_pct=91.0, sm_occupancy_pct=40.0, tensor_active_pct=63.0,
                                         dram_bw_pct=28.0)),
                        peak_memory=PeakMemory(int(3.5 * 2**30), "jax Device.memory_stats()", "mode", 100 * 2**30))
    pipeline = replace(summary("pipeline", 190.0, wait=0.01, gpu_util=93.0, gpm=dict(sm_active_pct=88.0)),
                       peak_memory=PeakMemory(int(3.5 * 2**30), "jax Device.memory_stats()", "process", None))
    d = diagnosis(modes={"synthetic": synthetic, "pipeline": pipeline})
    log = SampleLog(interval_s=0.1, samples=d.samples.samples, **samples_kw)
    return replace(d, samples=log)


def test_gpu_table_shows_nvml_gpm_power_and_peak_with_its_source():
    out = text(render_diagnosis(gpu_diagnosis()), width=110)
    rows = [line for line in out.splitlines() if line.startswith(("│synthetic", "│pipeline"))]
    assert [c.strip() for c in rows[2].split("│")[1:9]] == ["synthetic", "97%", "91%", "40%", "63%", "28%", "300", "3.50"]
    assert rows[3].rstrip().endswith("3.50≤│")  # JAX could not reset its peak: an upper bound
    flat = " ".join(out.split())  # the caption wraps at the table's width
    assert "SM act, occup, tensor, DRAM bw: GPM, how much of the chip worked" in flat
    assert "peak: jax Device.memory_stats(); ≤: the process's peak so far (JAX cannot reset it)" in flat


def test_metrics_line_says_which_gpu_metrics_the_run_had_and_why_not_others():
    d = gpu_diagnosis(gpu_metrics={"util_pct": "nvmlDeviceGetUtilizationRates", "power_w": "nvmlDeviceGetPowerUsage",
                                   "gpm_sm_active_pct": "GPM (nvmlGpmMetricsGet)"},
                      gpu_metric_reasons={"util_samples_pct": "nvmlDeviceGetSamples: Not Supported",
                                          "process_memory_bytes": "this process (pid 7) is not in NVML's list"})
    out = text(render_diagnosis(d), width=200)
    assert "GPU metrics: utilization, power, GPM SM activity" in out
    assert ("not available: utilization driver samples (nvmlDeviceGetSamples: Not Supported); this process's memory "
            "(this process (pid 7) is not in NVML's list)") in out


def test_no_gpu_no_gpu_table_and_no_metrics_line():
    from dataclasses import replace

    from pipediag.records.readings import SampleLog

    d = diagnosis()
    d = replace(d, samples=SampleLog(interval_s=0.1, samples=d.samples.samples, gpu_unavailable_reason="NVML could not start"))
    out = text(render_diagnosis(d))
    assert "GPU metrics" not in out and "SM act" not in out


def test_timing_line_names_framework_and_sync():
    from dataclasses import replace

    from pipediag.records.step import StepInfo

    d = replace(diagnosis(), step=StepInfo("user", "step function 'step' from t.py:make_step, fed numpy batches",
                                           "numpy", "jax", "block_until_ready() on the step's JAX arrays"))
    assert "timing: jax step; block_until_ready() on the step's JAX arrays" in text(render_diagnosis(d))


def test_a_fit_shows_only_the_pipeline_mode():
    from dataclasses import replace

    from pipediag.records.step import StepInfo
    from tests.summaries import summary

    d = diagnosis(verdict=VERDICT, modes={"pipeline": summary("pipeline", 50.0, wait=0.5, stop="fit_ended")})
    d = replace(d, step=StepInfo("keras_fit", "your own model.fit of 'm'"), target="model.fit of Keras model 'm'")
    out = text(render_diagnosis(d))
    assert out.startswith("pipediag InputMonitor: model.fit of Keras model 'm'")
    assert "│pipeline" in out and "│synthetic" not in out and "│tuned" not in out
    assert "stopped early" not in out
def test_anatomy_table_marks_the_slow_stage_and_its_units():
    from tests.summaries import anatomy_and_stages

    anatomy, stages = anatomy_and_stages()
    out = text(render_diagnosis(diagnosis(verdict=VERDICT, anatomy=anatomy, stages=stages)))
    assert "Anatomy: the pipeline cut after each stage, iterated alone" in out
    row = next(line for line in out.splitlines() if line.startswith("│map(decode_example)"))
    assert "50.0 ±" in row and "+19.00" in row and "∞" in row and "48.0 KiB" in row
    assert "◀ slowest; serial, random" in out
    assert "stages before batch(16) yield elements, shown as elements/s ÷ 16" in out
    assert "slow stage: map(decode_example) adds 19.00 ms to every batch" in out


def test_stages_left_untimed_for_one_reason_share_one_line():
    from pipediag.analysis.waterfall import StageTiming, build_anatomy
    from pipediag.records.stage import Stage

    stages = [Stage(0, "s", "RangeDataset", "source"), Stage(1, "m", "MapDataset", "map", function="decode"),
              Stage(2, "sh", "ShuffleDataset", "shuffle", buffer_size=100),
              Stage(3, "m2", "MapDataset", "map", function="shift"), Stage(4, "b", "BatchDatasetV2", "batch", buffer_size=1)]

    def timing(index, per_sec):
        ns = tuple(int(10 / per_sec * 1e9 * f) for f in (0.98, 1.02) * 4)
        return StageTiming(index, chunk_elements=(10,) * 8, chunk_ns=ns, stop_reason="stable")

    why = "not timed: the pipeline up to map(decode) already took 10.0 ms per batch"
    timings = {0: timing(0, 10_000), 1: timing(1, 100), 2: StageTiming(2, reason=why), 3: StageTiming(3, reason=why),
               4: timing(4, 99)}
    out = text(render_diagnosis(diagnosis(verdict=VERDICT, anatomy=build_anatomy(stages, timings), stages=stages)))
    flat = " ".join(out.split())
    assert f"shuffle(100), map(shift): {why}" in flat and flat.count(why) == 1


def test_tuned_mode_lists_each_changes_own_speedup():
    from pipediag.analysis.ablation import VariantResult, conclude

    parallel = Change("parallel_map", "map(decode_example)", "n", "map(decode_example): parallel", True)
    prefetch = Change("prefetch", "batch(16)", "b", "prefetch(AUTOTUNE) at the end", True)
    variants = [VariantResult("a", "alone", (parallel.key,), 150.0, (145.0, 155.0), 100, "stable"),
                VariantResult("b", "alone", (prefetch.key,), 50.5, (49.0, 52.0), 100, "stable"),
                VariantResult("t", "together", (parallel.key, prefetch.key), 155.0, (150.0, 160.0), 100, "stable")]
    ablation = conclude(50.0, (48.0, 52.0), [(c.key, c.kind, c.stage) for c in (parallel, prefetch)], variants, 3.0)
    out = text(render_diagnosis(diagnosis(verdict=VERDICT, tuning=[parallel, prefetch], ablation=ablation)))
    assert "Tuned mode: all applied changes together ×3.10" in out
    assert "[applied] map(decode_example): parallel — alone ×3.00 (gain)" in out
    assert "[applied] prefetch(AUTOTUNE) at the end — alone ×1.01 (none)" in out
    # The fixes withheld the parallel map's speedup (drift, or a compute-bound step): it sits in
    # `tried`, the notes say why, and the list no longer calls it a gain.
    withheld = diagnosis(verdict=VERDICT, tuning=[parallel, prefetch], ablation=ablation, tried=(parallel, prefetch),
                         notes=("map(decode_example): parallel ran 3.00x the original alone, not taken as a gain: …",))
    out = text(render_diagnosis(withheld), width=130)
    assert "[applied] map(decode_example): parallel — alone ×3.00 (faster, not taken as a gain)" in out
    assert "(gain)" not in out


def several_gpus_diagnosis():
    from dataclasses import replace

    from pipediag.records.readings import SampleLog

    d = gpu_diagnosis()
    modes = {}
    for name, m in d.modes.items():
        first = replace(m.gpu, index=0, uuid="GPU-a")
        second = replace(m.gpu, index=1, uuid="GPU-b", util_pct=12.0, util_pct_ci=(10.0, 14.0))
        modes[name] = replace(m, gpus=(first, second), gpu=first)
    log = SampleLog(interval_s=0.1, samples=d.samples.samples, gpu_selection="GPUs 0, 1 (CUDA_VISIBLE_DEVICES)")
    return replace(d, modes=modes, samples=log)


def test_several_gpus_get_a_row_each_under_their_mode():
    out = text(render_diagnosis(several_gpus_diagnosis()), width=120)
    rows = [[c.strip() for c in line.split("│")[1:10]] for line in out.splitlines()
            if line.startswith("│") and len(line.split("│")) > 9]
    gpu_rows = [r for r in rows if r[1] in ("0", "1")]
    assert gpu_rows[0][:3] == ["synthetic", "0", "97%"] and gpu_rows[0][-1] == "3.50"
    assert gpu_rows[1][:3] == ["", "1", "12%"] and gpu_rows[1][-1] == ""  # the mode's peak once
    flat = " ".join(out.split())
    assert "GPUs 0, 1 (CUDA_VISIBLE_DEVICES); the Modes table's GPU column is their mean" in flat


def test_one_gpu_has_no_gpu_column():
    out = text(render_diagnosis(gpu_diagnosis()), width=120)
    assert "│gpu" not in out and "CUDA_VISIBLE_DEVICES" not in out


def test_the_time_line_says_where_the_time_went():
    from dataclasses import replace

    from pipediag.records.phases import Phase

    d = replace(diagnosis(verdict=VERDICT), phases=(Phase("first_batch", 0.3), Phase("synthetic", 4.0),
                                                    Phase("pipeline", 4.1), Phase("anatomy", 6.0)))
    out = text(render_diagnosis(d), width=120)
    assert "time: 21.5 s — first batch 0.3, synthetic 4.0, pipeline 4.1, anatomy 6.0, other 7.1" in out
    assert "time: 21.5 s\n" in text(render_diagnosis(diagnosis(verdict=VERDICT)))  # a file without phases


def test_quick_says_the_fixes_were_not_measured_and_how_to_get_them():
    from dataclasses import replace

    d = diagnosis(verdict=VERDICT)
    out = text(render_diagnosis(replace(d, settings={**d.settings, "quick": True})), width=200)
    assert "Fixes not measured (--quick" in out and "without --quick" in out and "No fix recommended" not in out


def test_a_change_the_drifting_controls_leave_open_is_called_not_settled_not_none():
    from pipediag.analysis.ablation import conclude
    from tests.analysis.test_ablation import PMAP, TFDS_BUILDER, TFDS_CACHE

    pmap = Change("parallel_map", "map(augment)", PMAP[0].split("@")[1], "map(augment): parallel", True)
    cache = Change("cache", "map(lookup_nest)", TFDS_CACHE[0].split("@")[1], "cache() after map(lookup_nest)", True)
    assert (pmap.key, cache.key) == (PMAP[0], TFDS_CACHE[0])
    ablation = conclude(88.3, (83.3, 93.9), [PMAP, TFDS_CACHE], TFDS_BUILDER, window_s=3.0)
    # as diagnose concludes it now: the cache offered unmeasured, parallel_map tried
    out = text(render_diagnosis(diagnosis(verdict=VERDICT, tuning=[pmap, cache], ablation=ablation, tried=(pmap,))),
               width=130)
    assert "[applied] cache() after map(lookup_nest) — alone ×0.98 (not settled: the control runs drifted apart)" in out
    assert "[applied] map(augment): parallel — alone ×0.89 (none)" in out
    # a diagnosis saved before the rule listed both as tried: it still reads as saved
    out = text(render_diagnosis(diagnosis(verdict=VERDICT, tuning=[pmap, cache], ablation=ablation,
                                          tried=(pmap, cache))), width=130)
    assert "alone ×0.98 (none)" in out and "not settled" not in out
