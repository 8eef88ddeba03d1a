from dataclasses import replace

import pytest

from pipediag.analysis.gpu import PeakMemory
from pipediag.fixes import catalog
from pipediag.fixes.recommend import recommend
from pipediag.records.change import Change
from pipediag.records.stage import Stage
from pipediag.records.verdict import GPU_LIMIT_MEMORY_BANDWIDTH, GPU_LIMIT_SMALL_KERNELS, CpuPattern, Verdict
from tests.summaries import GiB, summary, waiting_cpu


def verdict(bottleneck, pattern=None, **facts):
    return Verdict(bottleneck, "high", "h", ("e",), cpu_pattern=None if pattern is None else CpuPattern(pattern, "t"),
                   facts=facts)


PARALLEL = Change("parallel_map", "map(decode_example)", "MapDataset/_2", "map(decode_example): parallel", True)
PREFETCH = Change("prefetch", "batch(16)", "BatchDatasetV2/_3", "prefetch", True)
SKIPPED_CACHE = Change("cache", "map(decode)", "n", "cache", False,
                       reason="it would hold ~40.0 GiB, over the RAM budget of 8.0 GiB: consider snapshot() to disk")


def modes(pipeline_rate, tuned_rate, tuned_wait=0.0):
    return {"pipeline": summary("pipeline", pipeline_rate, wait=0.6), "tuned": summary("tuned", tuned_rate, wait=tuned_wait)}


def test_measured_fix_names_the_users_stage_and_carries_the_speedup():
    rec = recommend(verdict("input", "one_core"), modes(50, 155), [PARALLEL], gpu_present=False)
    fix = rec.fixes[0]
    assert fix.kind == "parallel_map" and fix.stage == "map(decode_example)"
    assert fix.code == "ds = ds.map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)"
    assert abs(fix.measured_speedup - 3.1) < 1e-9
    assert fix.basis.startswith("measured: the tuned pipeline ran 3.10x the original")
    assert fix.basis.endswith(f"(95%: {fix.speedup_ci[0]:.2f}-{fix.speedup_ci[1]:.2f}x)")  # with its interval


def test_changes_without_a_measurable_gain_are_tried_not_recommended():
    rec = recommend(verdict("input", "partial"), modes(50, 51), [PARALLEL, PREFETCH], gpu_present=False)
    assert rec.fixes == ()
    assert [c.kind for c in rec.tried] == ["parallel_map", "prefetch"]


def saturated_tuned(wait=0.5, per_core=(95, 92)):
    return {"pipeline": summary("pipeline", 50, wait=0.6),
            "tuned": summary("tuned", 80, wait=wait, waiting=waiting_cpu(list(per_core)))}


SCALE = "pipediag scale data.py:make_dataset --model train.py:make_model --workers 1,2,4 --accelerators 1,8"


def test_cores_full_and_still_waiting_after_tuning_point_at_tf_data_service_and_pipediag_scale():
    rec = recommend(verdict("input", "saturated"), saturated_tuned(), [PARALLEL], gpu_present=False,
                    scale_command=SCALE)
    kinds = [f.kind for f in rec.fixes]
    assert kinds == ["parallel_map", "tf_data_service"]
    service = rec.fixes[1]
    assert service.measured_speedup is None and service.basis.startswith("not measured")
    assert "still waited 50% of the time with the cores still full (1.9 of 2 busy)" in service.basis
    assert f"#   {SCALE}" in service.code and "distribute(" in service.code


@pytest.mark.parametrize("case", ["pattern_not_saturated", "tuned_not_waiting", "tuned_cores_not_full", "no_tuned"])
def test_tf_data_service_needs_full_cores_and_waiting_even_after_tuning(case):
    pattern = "partial" if case == "pattern_not_saturated" else "saturated"
    modes = {
        "pattern_not_saturated": saturated_tuned(),
        "tuned_not_waiting": saturated_tuned(wait=0.1),
        "tuned_cores_not_full": saturated_tuned(per_core=(60, 40)),
        "no_tuned": {"pipeline": summary("pipeline", 50, wait=0.6), "tuned": None},
    }[case]
    rec = recommend(verdict("input", pattern), modes, [PARALLEL], gpu_present=False)
    assert "tf_data_service" not in [f.kind for f in rec.fixes]


def test_tf_data_service_fix_says_a_python_stage_must_go_first():
    stages = [Stage(0, "n0", "TensorSliceDataset", "source"),
              Stage(1, "n1", "MapDataset", "map", function="slow_read", has_py_function=True)]
    rec = recommend(verdict("input", "saturated"), saturated_tuned(), [], gpu_present=False, stages=stages)
    service = next(f for f in rec.fixes if f.kind == "tf_data_service")
    assert "first rewrite `map(slow_read)` with TensorFlow ops" in service.basis
    assert "pipediag scale data.py:make_dataset" in service.code  # a generic command without the CLI's


def test_cache_over_ram_budget_becomes_a_snapshot_suggestion():
    rec = recommend(verdict("input", "one_core"), modes(50, 51), [SKIPPED_CACHE], gpu_present=False)
    assert [f.kind for f in rec.fixes] == ["snapshot"]
    assert "40.0 GiB" in rec.fixes[0].basis


def test_compute_bound_recommends_no_input_change():
    rec = recommend(verdict("compute"), modes(50, 50.5), [PARALLEL], gpu_present=True)
    assert [f.kind for f in rec.fixes] == ["mixed_precision", "xla"]
    assert all(f.measured_speedup is None for f in rec.fixes)
    assert rec.tried == (PARALLEL,)


def test_memory_verdict_fixes():
    rec = recommend(verdict("memory", oom_mode="synthetic"), {"pipeline": None, "tuned": None}, [], gpu_present=True,
                    tf_gpu_without_memory_growth=True)
    assert [f.kind for f in rec.fixes] == ["batch_size", "gradient_accumulation", "mixed_precision", "memory_growth"]
    assert "BATCH_SIZE // 2" in rec.fixes[0].code
    assert "ran out of memory" in rec.fixes[0].basis
    assert "gradient_accumulation_steps=2" in rec.fixes[1].code  # Keras' own option


def test_memory_fixes_for_a_jax_step_are_written_for_jax():
    synthetic = summary("synthetic", None, steps=0, gpu_total=140 * GiB)
    synthetic = replace(synthetic, peak_memory=PeakMemory(100 * GiB, "jax Device.memory_stats()", "mode", 105 * GiB))
    rec = recommend(verdict("memory", oom_mode="synthetic"), {"synthetic": synthetic, "pipeline": None}, [],
                    gpu_present=True, tf_gpu_without_memory_growth=True, framework="jax")
    kinds = [f.kind for f in rec.fixes]
    assert kinds == ["batch_size", "gradient_accumulation", "mixed_precision", "allocator"]  # no TF memory growth
    assert "optax.MultiSteps" in rec.fixes[1].code
    assert "jnp.bfloat16" in rec.fixes[2].code
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" in rec.fixes[3].code
    assert "105.0 of the GPU's 140.0 GiB (75%)" in rec.fixes[3].basis


def test_memory_fixes_for_a_torch_step():
    rec = recommend(verdict("memory", oom_mode="synthetic"), {}, [], gpu_present=True, framework="torch")
    assert [f.kind for f in rec.fixes] == ["batch_size", "gradient_accumulation", "mixed_precision", "allocator"]
    assert "torch.autocast" in rec.fixes[2].code and "expandable_segments" in rec.fixes[3].code


def test_host_verdict_fixes():
    rec = recommend(verdict("host"), modes(500, 505), [], gpu_present=True)
    assert [f.kind for f in rec.fixes] == ["batch_size", "steps_per_call", "xla"]
    assert "mostly idle" in rec.fixes[0].basis
    assert "steps_per_execution" in rec.fixes[1].code


def test_a_step_compiled_with_xla_is_not_told_to_compile_with_xla():
    # Seen on the H200 (run 20, tf_tiny_step): a Keras model that Keras had compiled with XLA
    # (jit_compile="auto" is XLA on a GPU) was told "Compile the step with XLA".
    host = recommend(verdict("host"), modes(500, 505), [], gpu_present=True, step_xla=True)
    assert [f.kind for f in host.fixes] == ["batch_size", "steps_per_call"]
    assert "compiled with XLA already" in host.fixes[1].basis
    compute = recommend(verdict("compute"), modes(50, 50.5), [], gpu_present=True, step_xla=True)
    assert [f.kind for f in compute.fixes] == ["mixed_precision"]
    bandwidth = recommend(verdict("compute", gpu_limit=GPU_LIMIT_MEMORY_BANDWIDTH), modes(50, 50.5), [],
                          gpu_present=True, step_xla=True)
    assert [f.kind for f in bandwidth.fixes] == ["mixed_precision"]
    # Known not to be XLA, or unknown: XLA stays
    for known in (False, None):
        assert "xla" in [f.kind for f in recommend(verdict("compute"), modes(50, 50.5), [], gpu_present=True,
                                                   step_xla=known).fixes]


@pytest.mark.parametrize("bottleneck, kinds", [("host", ["batch_size", "steps_per_call", "xla"]),
                                               ("compute", ["mixed_precision", "xla"])])
def test_a_faster_tuned_run_with_nothing_applied_is_drift_not_a_fix(bottleneck, kinds):
    # Seen on the H200: nothing to change, the rebuilt graph ran 1.34x pipeline mode (two runs of
    # one pipeline), and that "gain" swallowed the step's own fixes.
    skipped = Change("prefetch", None, "n", "prefetch", False, reason="the pipeline already ends with prefetch")
    rec = recommend(verdict(bottleneck), modes(115, 154), [skipped], gpu_present=True)
    assert [f.kind for f in rec.fixes] == kinds and rec.tried == ()


def test_small_kernels_host_verdict_says_so_and_speaks_jax():
    rec = recommend(verdict("host", gpu_limit=GPU_LIMIT_SMALL_KERNELS), modes(500, 505), [], gpu_present=True,
                    framework="jax")
    assert "fill few SMs" in rec.fixes[0].basis
    assert [f.kind for f in rec.fixes] == ["batch_size", "xla"]  # the kernels are small, not the calls many
    assert rec.fixes[1].code.startswith("step = jax.jit(step")


def test_memory_bandwidth_bound_compute_recommends_precision_and_fusion_for_that_reason():
    rec = recommend(verdict("compute", gpu_limit=GPU_LIMIT_MEMORY_BANDWIDTH), modes(50, 50.5), [], gpu_present=True,
                    framework="torch")
    assert [f.kind for f in rec.fixes] == ["mixed_precision", "xla"]
    assert "halve the bytes" in rec.fixes[0].basis and "keeps intermediates on chip" in rec.fixes[1].basis
    assert "torch.compile" in rec.fixes[1].code


def test_every_kind_has_a_title_and_code_in_every_framework():
    for framework in (None, "tensorflow", "jax", "torch"):
        for kind in catalog.FIX_KINDS:
            assert catalog.title(kind, "map(f)", framework)
            assert catalog.code(kind, "map(f)", framework=framework)
def ablation(alone, together, control=None):
    """An ablation from pipeline 50 batches/s: `alone` pairs each change with its alone rate (a
    single change with `control`: no alone run, the control's rate before the together run)."""
    from pipediag.analysis.ablation import VariantResult, conclude

    def v(role, keys, rate):
        return VariantResult(f"{role}", role, tuple(keys), rate, (rate * 0.97, rate * 1.03), 100, "stable")

    if control is None:
        variants = [v("alone", [c.key], rate) for c, rate in alone]
    else:
        variants = [v("control", [], control)]
    variants.append(v("together", [c.key for c, _ in alone], together))
    return conclude(50.0, (48.5, 51.5), [(c.key, c.kind, c.stage) for c, _ in alone], variants, window_s=3.0)


def test_with_the_ablation_each_fix_carries_its_own_speedup():
    a = ablation([(PARALLEL, 155.0), (PREFETCH, 51.0)], together=160.0)
    rec = recommend(verdict("input", "one_core"), modes(50, 160), [PARALLEL, PREFETCH], gpu_present=False, ablation=a)
    assert [f.kind for f in rec.fixes] == ["parallel_map"]
    fix = rec.fixes[0]
    assert fix.measured_speedup == pytest.approx(3.1)
    assert fix.basis.startswith("measured alone: training ran 3.10x the original (95%: ")
    assert fix.basis.endswith("all 2 changes together: 3.20x")
    assert fix.title == "`map(decode_example)` runs on one core: add num_parallel_calls=tf.data.AUTOTUNE"
    assert [c.kind for c in rec.tried] == ["prefetch"]


def test_fixes_are_ordered_by_their_own_gain():
    cache = Change("cache", "map(decode)", "n", "cache", True)
    a = ablation([(PARALLEL, 80.0), (cache, 200.0)], together=260.0)
    rec = recommend(verdict("input", "one_core"), modes(50, 260), [PARALLEL, cache], gpu_present=False, ablation=a)
    assert [(f.kind, round(f.measured_speedup, 2)) for f in rec.fixes] == [("cache", 4.0), ("parallel_map", 1.6)]


def test_a_change_that_only_helps_on_top_of_the_others_is_measured_so():
    # Prefetch alone gains nothing, but together (220) is clearly faster than parallel map alone (155).
    a = ablation([(PARALLEL, 155.0), (PREFETCH, 51.0)], together=220.0)
    rec = recommend(verdict("input", "one_core"), modes(50, 220), [PARALLEL, PREFETCH], gpu_present=False, ablation=a)
    assert [f.kind for f in rec.fixes] == ["parallel_map", "prefetch"]
    prefetch = rec.fixes[1]
    assert prefetch.measured_speedup == pytest.approx(220 / 155)
    assert prefetch.basis.startswith("measured on top of the other changes: all together ran 1.42x the run without it")
    assert rec.tried == ()


def test_snapshot_suggestion_carries_the_size_estimate():
    skipped = Change("cache", "map(decode)", "n", "cache", False,
                     reason="it would hold ~40.0 GiB, over the RAM budget of 8.0 GiB: consider snapshot() to disk",
                     details={"elements": 10**6, "estimated_bytes": 40 * 2**30, "estimated_fill_seconds": 900.0})
    rec = recommend(verdict("input", "one_core"), modes(50, 51), [skipped], gpu_present=False)
    assert "~40.0 GiB on disk" in rec.fixes[0].code


def shuffle_stages(kib=96):
    return [
        Stage(0, "RangeDataset/_0", "RangeDataset", "source", cardinality=1_000_000, bytes_per_element=8.0),
        Stage(1, "MapDataset/_1", "MapDataset", "map", function="load", bytes_per_element=kib * 2**10),
        Stage(2, "ShuffleDatasetV3/_2", "ShuffleDatasetV3", "shuffle", buffer_size=10922, is_random=True,
              bytes_per_element=kib * 2**10),
        Stage(3, "BatchDatasetV2/_3", "BatchDatasetV2", "batch", buffer_size=32),
    ]


def buffer_verdict(budget=512 * 2**20):
    return Verdict("memory", "high", "h", ("e",), stage="shuffle(10922)",
                   facts={"memory_source": "pipeline_buffers", "ram_budget_bytes": budget, "ram_budget_source": "given"})


def test_a_shuffle_buffer_over_the_budget_gets_a_smaller_buffer_and_nothing_that_adds_buffers():
    rec = recommend(buffer_verdict(), modes(50, 155), [PARALLEL, PREFETCH], gpu_present=True,
                    stages=shuffle_stages())
    [fix] = rec.fixes
    assert (fix.kind, fix.stage, fix.measured_speedup) == ("shuffle_buffer", "shuffle(10922)", None)
    assert fix.basis.startswith("not measured")
    assert "10922 elements x 96 KiB" in fix.basis and "2.0x the RAM budget" in fix.basis
    assert "ds = ds.shuffle(1024)  # was shuffle(10922): ~1024 MiB" in fix.code and "= ~96 MiB" in fix.code
    assert [c.kind for c in rec.tried] == ["parallel_map", "prefetch"]


def test_an_oom_memory_verdict_still_gets_the_step_fixes():
    rec = recommend(verdict("memory", oom_mode="synthetic"), {}, [], gpu_present=False, stages=shuffle_stages())
    assert "shuffle_buffer" not in [f.kind for f in rec.fixes]


GENERATOR = Stage(1, "FlatMapDataset/_1", "FlatMapDataset", "from_generator", function="examples", parallelism=1,
                  has_py_function=True)
GEN_STAGES = [Stage(0, "TensorDataset/_0", "TensorDataset", "source"), GENERATOR,
              Stage(2, "BatchDatasetV2/_2", "BatchDatasetV2", "batch", buffer_size=64)]
GEN_PREFETCH = Change("prefetch", "batch(64)", "BatchDatasetV2/_2", "prefetch", True)


def test_a_slow_generator_gets_batched_tensorflow_ops_not_parallel_calls():
    rec = recommend(verdict("input", "partial"), modes(30, 30), [GEN_PREFETCH], gpu_present=False,
                    stages=GEN_STAGES, slow_stage="from_generator(examples)")
    [fix] = rec.fixes
    assert (fix.kind, fix.stage, fix.measured_speedup) == ("vectorize_map", "from_generator(examples)", None)
    assert fix.title.startswith("`from_generator(examples)` runs Python for every element")
    assert fix.basis.startswith("not measured") and "the anatomy found `from_generator(examples)` the slowest" in fix.basis
    assert "the GIL" in fix.basis and "parallel calls would queue on it" in fix.basis
    assert "# examples() runs Python once per example" in fix.code and "[64, ...]" in fix.code
    assert [c.kind for c in rec.tried] == ["prefetch"]


def test_one_busy_core_points_at_the_only_python_stage():
    rec = recommend(verdict("input", "one_core"), modes(30, 30), [], gpu_present=False, stages=GEN_STAGES)
    assert [f.kind for f in rec.fixes] == ["vectorize_map"]
    assert "about one core was busy" in rec.fixes[0].basis


def test_python_stages_without_a_pointer_or_with_a_measured_parallel_fix_get_no_advice():
    assert recommend(verdict("input", "partial"), modes(30, 30), [], gpu_present=False, stages=GEN_STAGES).fixes == ()
    py_map = Stage(1, "MapDataset/_1", "MapDataset", "map", function="decode_example", has_py_function=True)
    rec = recommend(verdict("input", "one_core"), modes(50, 155), [PARALLEL], gpu_present=False,
                    stages=[py_map], slow_stage="map(decode_example)")
    assert [f.kind for f in rec.fixes] == ["parallel_map"]  # making it parallel helped: that is the fix
    assert recommend(verdict("compute"), modes(30, 30), [], gpu_present=False, stages=GEN_STAGES,
                     slow_stage="from_generator(examples)").fixes[0].kind == "xla"


def test_python_that_waits_on_io_gets_no_gil_advice():
    # A py_function read that sleeps (latency-bound files): the CPUs sat idle, the GIL was free.
    reader = Stage(1, "InterleaveDataset/_1", "InterleaveDataset", "interleave", function="read_file",
                   has_py_function=True)
    rec = recommend(verdict("input", "idle"), modes(15, 15), [], gpu_present=False, stages=[reader],
                    slow_stage="interleave(read_file)")
    assert rec.fixes == ()
    interleave = Change("interleave", "interleave(read_file)", "InterleaveDataset/_1", "parallel", True)
    rec = recommend(verdict("input", "partial"), modes(15, 200), [interleave], gpu_present=False, stages=[reader],
                    slow_stage="interleave(read_file)")
    assert [f.kind for f in rec.fixes] == ["interleave"]  # measured at that stage: no Python advice beside it


CACHE = Change("cache", "map(decode)", "n", "cache", True)


def test_a_gain_above_the_free_input_ceiling_is_drift_not_a_fix():
    # keras-io audio on the CPU: the cache variant fed the step 1.54x faster than pipeline mode,
    # and faster than the synthetic run itself, which no input change can do
    a = ablation([(CACHE, 77.0)], together=77.0)
    summaries = {**modes(50, 77), "synthetic": summary("synthetic", 52)}
    rec = recommend(verdict("input", "partial"), summaries, [CACHE], gpu_present=False, ablation=a)
    assert rec.fixes == () and [c.kind for c in rec.tried] == ["cache"]
    assert len(rec.withheld) == 1
    assert rec.withheld[0].startswith("cache at `map(decode)` ran 1.54x the original alone, not taken as a gain: it "
                                      "fed the step 77.0 batches/s, above the 52.0 the step ran with free input")
    # without the ablation (one run of all changes) the tuned mode's own rate is judged
    rec = recommend(verdict("input", "partial"), summaries, [CACHE], gpu_present=False)
    assert rec.fixes == () and rec.withheld[0].startswith("the tuned pipeline ran 1.54x the original, not taken as a "
                                                          "gain: it fed the step 77.0 batches/s")


def with_free_input_again(a, rate):
    """The ablation `a` with the step timed on synthetic data again after its runs (runs_above_free)."""
    from pipediag.analysis.ablation import VariantResult

    again = VariantResult("free input again: the step on synthetic data", "free_input", (), rate,
                          (rate * 0.97, rate * 1.03), 100, "stable")
    return replace(a, variants=a.variants + (again,))


def test_a_gain_above_synthetic_mode_stands_where_free_input_timed_again_ran_as_fast():
    # real/tf_load_images, accuracy runs 27 and 29 (2-core machine, 2026-12-06): the cache alone fed
    # the step 1.43x and 1.71x its control, above a free-input rate measured minutes before, and was
    # refused as drift; a comparison afterwards put the cached pipeline 1.60x AUTOTUNE's. Free input
    # timed again beside the run says whether the step itself can run that fast now.
    summaries = {**modes(50, 77), "synthetic": summary("synthetic", 52)}
    as_fast = with_free_input_again(ablation([(CACHE, 77.0)], together=77.0), 78.0)
    rec = recommend(verdict("input", "partial"), summaries, [CACHE], gpu_present=False, ablation=as_fast)
    assert [f.kind for f in rec.fixes] == ["cache"] and rec.withheld == () and rec.tried == ()
    assert rec.fixes[0].measured_speedup == pytest.approx(77 / 50)
    # timed again, free input still ran slower than the change's run: the step itself sped up, drift
    slower = with_free_input_again(ablation([(CACHE, 77.0)], together=77.0), 60.0)
    rec = recommend(verdict("input", "partial"), summaries, [CACHE], gpu_present=False, ablation=slower)
    assert rec.fixes == () and [c.kind for c in rec.tried] == ["cache"]
    assert rec.withheld[0].startswith(
        "cache at `map(decode)` ran 1.54x the original alone, not taken as a gain: it fed the step 77.0 batches/s, "
        "above the 52.0 the step ran with free input in synthetic mode and the 60.0 it ran with free input again "
        "after the tuned runs (the 95% intervals apart): no input change can beat free input")
    # a compute verdict still refuses it, whatever free input did
    rec = recommend(verdict("compute"), summaries, [CACHE], gpu_present=False, ablation=as_fast)
    assert "cache" not in [f.kind for f in rec.fixes]


def test_a_gain_up_to_the_ceiling_stays_a_fix():
    a = ablation([(PARALLEL, 155.0), (CACHE, 51.0)], together=160.0)
    summaries = {**modes(50, 160), "synthetic": summary("synthetic", 162)}
    rec = recommend(verdict("input", "one_core"), summaries, [PARALLEL, CACHE], gpu_present=False, ablation=a)
    assert [f.kind for f in rec.fixes] == ["parallel_map"] and rec.withheld == ()


def test_an_alone_gain_above_the_ceiling_is_withheld_and_the_others_stay():
    a = ablation([(PARALLEL, 155.0), (CACHE, 190.0)], together=160.0)
    summaries = {**modes(50, 160), "synthetic": summary("synthetic", 162)}
    rec = recommend(verdict("input", "one_core"), summaries, [PARALLEL, CACHE], gpu_present=False, ablation=a)
    assert [f.kind for f in rec.fixes] == ["parallel_map"]
    assert rec.withheld[0].startswith("cache at `map(decode)` ran 3.80x the original alone, not taken as a gain: it "
                                      "fed the step 190.0 batches/s, above the 162.0")


def test_a_compute_verdict_offers_no_input_change_as_a_gain_even_when_one_measured_faster():
    # the same with another process loading the machine: compute (confidence lowered), cache 1.92x
    a = ablation([(CACHE, 96.0)], together=96.0)
    summaries = {**modes(50, 96), "synthetic": summary("synthetic", 100, rel_ci=0.2)}
    contended = Verdict("compute", "low", "h", ("other processes kept 1.2 cores busy during pipeline mode",))
    rec = recommend(contended, summaries, [CACHE], gpu_present=False, ablation=a)
    assert [f.kind for f in rec.fixes] == ["xla"] and [c.kind for c in rec.tried] == ["cache"]
    assert "the step itself is the limit (compute-bound) and other processes competed for the CPU" in rec.withheld[0]
    assert "pipediag compare" in rec.withheld[0]


def test_a_gain_measured_under_contention_says_it_is_not_yet_settled():
    a = ablation([(PARALLEL, 155.0), (PREFETCH, 51.0)], together=160.0)
    contended = Verdict("input", "low", "h", ("other processes kept 1.1 cores busy during pipeline mode",))
    rec = recommend(contended, modes(50, 160), [PARALLEL, PREFETCH], gpu_present=False, ablation=a)
    assert [f.kind for f in rec.fixes] == ["parallel_map"]
    assert rec.fixes[0].basis.endswith("measured while other processes competed for the CPU, so not yet settled: "
                                       "confirm with `pipediag compare` (interleaved turns against the original)")


TFDS_CROP = Change("decode_crop", "map(augment)", "MapDataset/_9", "map(augment) only crops the images ...", True,
                   details={"crop_size": [64, 64], "decode_stage": "parallel_map(parse_and_decode)", "tfds": True,
                            "feature": "image"})


def test_a_measured_tfds_decode_crop_fix_is_tfds_decoders_code_with_the_users_stage_feature_and_crop():
    rec = recommend(verdict("input", "saturated"), modes(50, 100), [TFDS_CROP], gpu_present=False)
    fix = rec.fixes[0]
    assert fix.kind == "decode_crop" and fix.stage == "map(augment)" and fix.title.startswith("`map(augment)`")
    assert "decoders={'image': tfds.decode.SkipDecoding()}" in fix.code
    assert "in augment (map(augment))" in fix.code and "[64, 64]" in fix.code
    assert "tf.image.decode_and_crop_jpeg(x['image'], tf.stack([top, left, 64, 64])" in fix.code
    assert "tfds.decode.make_decoder()" in fix.code
    assert fix.basis.startswith("measured: the tuned pipeline ran 2.00x")


def test_a_tfds_decode_pipediag_could_not_move_is_still_offered_as_code_not_measured():
    failed = TFDS_CROP.skipped("could not rebuild the pipeline from its graph: ...", by_hand=True)
    rec = recommend(verdict("input", "saturated"), modes(50, 50), [failed], gpu_present=False)
    fix = next(f for f in rec.fixes if f.kind == "decode_crop")
    assert fix.measured_speedup is None and fix.basis.startswith("not measured: pipediag could not rebuild")
    assert "SkipDecoding" in fix.code
    # a decode left for a reason that also rules out the hand-written fix (the image is used whole) is no fix
    used = TFDS_CROP.skipped("map(stats) also uses the whole decoded image (in Cast)")
    fixes = recommend(verdict("input", "saturated"), modes(50, 50), [used], gpu_present=False).fixes
    assert all(f.kind != "decode_crop" for f in fixes)


def test_a_decode_in_an_earlier_map_of_the_users_says_which_function_returns_the_bytes():
    code = catalog.code("decode_crop", "map(crop)", crop_size=[64, 64], decode_stage="map(decode)", tfds=False)
    assert code.startswith("# in decode (map(decode)): return the JPEG bytes") and "in crop:" in code
    assert "decode_and_crop_jpeg(jpeg, tf.stack([top, left, 64, 64]), channels=3)" in code


def test_the_csv_fix_gives_the_tutorials_batch_then_decode_code_with_the_users_arguments():
    from pipediag.fixes import catalog

    details = {"form": "csv", "batch_size": 2048, "header": True, "decode_kwargs": {"na_value": "NA"},
               "record_defaults": "[''] * 2 + [0.0] * 410", "between": ["shuffle(10000)", "repeat", "prefetch(2)"],
               "quoted_newlines": "no quoted field holds a newline in the 20 file(s) (all read)"}
    stage = "parallel_interleave(filename_to_dataset)"
    assert catalog.title("vectorize_map", stage, form="csv").startswith(f"`{stage}` parses the CSV one row at a time")
    code = catalog.code("vectorize_map", stage, **details)
    assert "tf.data.TextLineDataset(f).skip(1)" in code
    assert "ds = lines.shuffle(10000).repeat().batch(2048)" in code
    assert "tf.io.decode_csv(x, record_defaults=column_defaults, na_value='NA')" in code
    assert "column_defaults = [''] * 2 + [0.0] * 410" in code
    assert code.endswith("here no quoted field holds a newline in the 20 file(s) (all read)")
    plain = catalog.code("vectorize_map", stage, batch_size=64)
    assert "decode_csv" not in plain  # batch-before-map keeps its own snippet


def test_a_single_change_is_measured_against_its_control_not_pipeline_mode():
    # The graph rebuilt unchanged ran 60 batches/s against pipeline mode's 50 (the rebuild effect,
    # docs/patch.md): a tuned run at 62 is 1.24x pipeline mode, but only 1.03x its control.
    a = ablation([(PARALLEL, 62.0)], together=62.0, control=60.0)
    rec = recommend(verdict("input", "one_core"), modes(50, 62), [PARALLEL], gpu_present=False, ablation=a)
    assert rec.fixes == () and [c.kind for c in rec.tried] == ["parallel_map"]
    # the same tuned run with a control at 40 (the machine slowed since pipeline mode) is a gain of 1.55x
    a = ablation([(PARALLEL, 62.0)], together=62.0, control=40.0)
    rec = recommend(verdict("input", "one_core"), modes(50, 62), [PARALLEL], gpu_present=False, ablation=a)
    assert [f.kind for f in rec.fixes] == ["parallel_map"]
    assert rec.fixes[0].measured_speedup == pytest.approx(62 / 40)
    assert rec.fixes[0].basis.startswith("measured: the tuned pipeline ran 1.55x the original")


def test_cores_full_with_nothing_left_to_rewrite_say_how_many_service_workers_would_feed_the_step():
    # Issue 25 on the H200: every core busy, input alone 4x slower than the free step, the tuning
    # rules found nothing to change (only threading, which adds no cores), no tuned mode.
    cores = [97.0] * 16
    modes = {"synthetic": summary("synthetic", 400), "pipeline": summary("pipeline", 100, wait=0.75, per_core=cores),
             "input_only": summary("input_only", 100, per_core=cores), "tuned": None}
    threading = Change("threading", None, None, "private threadpool", False, reason="the cores are busy")
    v = verdict("input", "saturated", input_wait_frac=0.75)
    rec = recommend(v, modes, [threading], gpu_present=True, scale_command=SCALE)
    service = next(f for f in rec.fixes if f.kind == "tf_data_service")
    assert "found nothing left to rewrite" in service.basis
    assert "100.0 batches/s on its 16 cores against the step's 400.0 with free input (4.0x)" in service.basis
    assert "about 4 tf.data service workers like this host (64 cores), 5 at the lower end" in service.basis
    # With a change the tuned mode could still make (and did not measure), the service is not yet the advice.
    assert "tf_data_service" not in [f.kind for f in recommend(v, modes, [PARALLEL], gpu_present=True).fixes]


def test_the_new_changes_code_says_what_moves_and_that_the_reduced_decode_is_approximate():
    moved = catalog.code("cache", "map(decode_and_resize)", repeat_stage="repeat")
    assert moved.startswith("ds = ds.map(decode_and_resize).cache().repeat()  # instead of .repeat().map(")
    reduced = catalog.code("decode_reduced", "map(decode_and_resize)", size=[160, 160], approximate=True)
    assert "reach = tf.minimum(hw[0] // 160, hw[1] // 160)" in reduced and "Approximate" in reduced
    assert "approximate" in catalog.title("decode_reduced", "map(decode_and_resize)", None, False, None)


def tfds_builder_ablation():
    """tfds_builder's ablation of 2026-12-06 (tests/analysis/test_ablation.py): the cache alone
    gained against the short control runs, not against the full-window one, which ran apart."""
    from pipediag.analysis.ablation import conclude
    from tests.analysis.test_ablation import PMAP, TFDS_BUILDER, TFDS_CACHE

    return conclude(88.3, (83.3, 93.9), [PMAP, TFDS_CACHE], TFDS_BUILDER, window_s=3.0)


PMAP_CHANGE = Change("parallel_map", "map(augment)", "MapDataset/_25", "map(augment): parallel", True)
TFDS_CACHE_CHANGE = Change("cache", "map(lookup_nest)", "PrefetchDataset/_22", "cache()", True)


def test_a_change_the_drifting_controls_leave_open_is_offered_unmeasured_and_says_why():
    summaries = {"synthetic": summary("synthetic", 199.0), "pipeline": summary("pipeline", 88.3, wait=0.5),
                 "tuned": summary("tuned", 100.4, wait=0.4)}
    changes = [PMAP_CHANGE, TFDS_CACHE_CHANGE]
    rec = recommend(verdict("input", "partial"), summaries, changes, gpu_present=False, ablation=tfds_builder_ablation())
    cache = [f for f in rec.fixes if f.kind == "cache"]
    assert len(cache) == 1 and cache[0].measured_speedup is None and cache[0].stage == "map(lookup_nest)"
    assert cache[0].basis.startswith("not settled: against each control run it ran 0.98-1.22x the original, "
                                     "a gain against one, and the control runs themselves")
    assert "80.5 to 99.7 batches/s, their 95% intervals apart" in cache[0].basis
    assert "`pipediag compare`" in cache[0].basis
    assert [c.kind for c in rec.tried] == ["parallel_map"]  # no gain against any control run: tried


def test_an_open_change_is_not_offered_where_no_input_change_can_gain():
    changes = [PMAP_CHANGE, TFDS_CACHE_CHANGE]
    # a compute-bound step: the speedup is drift whatever the controls did
    summaries = {"synthetic": summary("synthetic", 199.0), "pipeline": summary("pipeline", 88.3),
                 "tuned": summary("tuned", 100.4)}
    rec = recommend(verdict("compute"), summaries, changes, gpu_present=False, ablation=tfds_builder_ablation())
    assert not [f for f in rec.fixes if f.kind == "cache"]
    # the cache's run fed the step faster than free input did: drift, not a change that may help
    slow_free = {**summaries, "synthetic": summary("synthetic", 60.0)}
    rec = recommend(verdict("input", "partial"), slow_free, changes, gpu_present=False, ablation=tfds_builder_ablation())
    assert not [f for f in rec.fixes if f.kind == "cache"]
