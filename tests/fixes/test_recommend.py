import pytest

from pipediag.builder.stages import Stage
from pipediag.fixes import catalog
from pipediag.fixes.recommend import recommend
from pipediag.modes.changes import Change
from pipediag.verdict.rules import CpuPattern, Verdict
from tests.summaries import summary, waiting_cpu


def verdict(bottleneck, pattern=None):
    return Verdict(bottleneck, "high", "h", ("e",), cpu_pattern=None if pattern is None else CpuPattern(pattern, "t"))


PARALLEL = Change("parallel_map", "map(decode_example)", "MapDataset/_2", "map(decode_example): parallel", True)
PREFETCH = Change("prefetch", "batch(16)", "BatchDatasetV2/_3", "prefetch", True)
SKIPPED_CACHE = Change("cache", "map(decode)", "n", "cache", False, reason="it would hold ~40.0 GiB, over the RAM budget of 8.0 GiB: consider snapshot() to disk")


def modes(pipeline_rate, tuned_rate, tuned_wait=0.0):
    return {"pipeline": summary("pipeline", pipeline_rate, wait=0.6), "tuned": summary("tuned", tuned_rate, wait=tuned_wait)}


def test_measured_fix_names_the_users_stage_and_carries_the_speedup():
    rec = recommend(verdict("input", "one_core"), modes(50, 155), [PARALLEL], gpu_present=False)
    fix = rec.fixes[0]
    assert fix.kind == "parallel_map" and fix.stage == "map(decode_example)"
    assert fix.code == "ds = ds.map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)"
    assert abs(fix.measured_speedup - 3.1) < 1e-9
    assert fix.basis.startswith("measured: the tuned pipeline ran 3.10x the original")


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
    rec = recommend(verdict("memory"), {"pipeline": None, "tuned": None}, [], gpu_present=True,
                    tf_gpu_without_memory_growth=True)
    assert [f.kind for f in rec.fixes] == ["batch_size", "mixed_precision", "memory_growth"]
    assert "BATCH_SIZE // 2" in rec.fixes[0].code


def test_host_verdict_fixes():
    rec = recommend(verdict("host"), modes(500, 505), [], gpu_present=True)
    assert [f.kind for f in rec.fixes] == ["batch_size", "xla"]


def test_every_kind_has_a_title_and_code():
    for kind in catalog.FIX_KINDS:
        assert catalog.title(kind, "map(f)")
        assert catalog.code(kind, "map(f)")
