"""`pipediag.tuned`: the saved gains applied to the pipeline built now, by the tuned mode's rewrite.

The diagnoses here are scripted around real pipelines: their stages and planned changes come from
the real graph (as `diagnose` records them), their measured effects are set by the test, so what
is tested is the carrying over, never a timing."""

import pytest

tf = pytest.importorskip("tensorflow")

from pipediag import tuned, tuned_pipeline  # noqa: E402
from pipediag.analysis.ablation import Ablation, ChangeEffect  # noqa: E402
from pipediag.builder.graph import PipelineGraph  # noqa: E402
from pipediag.errors import UsageError  # noqa: E402
from pipediag.records.files import write_json  # noqa: E402
from pipediag.tuner.rewrite import facts_for, plan_tuning  # noqa: E402
from tests.fixtures import patch_builders as b  # noqa: E402
from tests.summaries import diagnosis as make_diagnosis  # noqa: E402


def scripted(builder, effects=None, **facts):
    """A diagnosis of `builder` (batch 16) whose planned changes are the real plan's, each measured
    as `effects.get(kind, "gain")`."""
    dataset = builder(batch_size=16)
    stages = tuple(PipelineGraph.from_dataset(dataset).stages())
    plan = plan_tuning(dataset, facts_for(dataset, ram_budget_bytes=2**30, fill_budget_seconds=10,
                                          latency_bound=facts.get("latency_bound", False)),
                       input_batches_per_sec=100.0)
    effects = effects or {}
    measured = tuple(ChangeEffect(c.key, c.kind, c.stage, effects.get(c.kind, "gain"), 1.5, (1.3, 1.7), "alone")
                     for c in plan.candidates)
    ablation = Ablation("fed_step", 10.0, (9.0, 11.0), (), measured, 1.8, (1.6, 2.0), 3.0)
    return make_diagnosis(stages=stages, tuning=plan.changes, ablation=ablation)


def stage_kinds(dataset):
    return [s.kind for s in PipelineGraph.from_dataset(dataset).stages()]


def test_a_serial_random_map_becomes_parallel_and_keeps_its_randomness():
    result = tuned_pipeline(b.serial_random_map, scripted(b.serial_random_map))
    assert [c.kind for c in result.applied] == ["parallel_map"]
    assert "parallel_map" in stage_kinds(result.dataset) and "map" not in stage_kinds(result.dataset)
    assert result.check.startswith("random pipeline")
    first, second = (next(iter(result.dataset)).numpy() for _ in range(2))
    assert first.shape == (16, 8) and not (first == second).all()  # still random per iterator


def test_the_cache_goes_before_the_random_stage_and_values_stay():
    result = tuned_pipeline(b.cache_then_random, scripted(b.cache_then_random))
    assert "cache" in {c.kind for c in result.applied}
    kinds = stage_kinds(result.dataset)
    assert kinds.index("cache") < max(i for i, k in enumerate(kinds) if k in ("map", "parallel_map"))
    assert result.cache_fill_ms is not None


def test_batch_before_map_is_rechecked_and_gives_equal_values(tmp_path):
    diagnosis = scripted(b.vectorizable)
    path = tmp_path / "run.json"
    write_json(diagnosis.to_dict(), str(path))
    result = tuned_pipeline(b.vectorizable, str(path))  # a saved diagnosis, by its path
    assert [c.kind for c in result.applied] == ["vectorize_map"]
    assert result.check.startswith("checked: first 1 batch(es) equal")
    assert stage_kinds(result.dataset).index("batch") < stage_kinds(result.dataset).index("parallel_map")
    assert next(iter(result.dataset)).numpy() == pytest.approx(next(iter(b.vectorizable(16))).numpy())


def test_changes_measured_without_gain_are_left_out_with_the_reason():
    result = tuned_pipeline(b.serial_random_map, scripted(b.serial_random_map, {"parallel_map": "none"}))
    assert result.applied == ()
    left = {c.kind: c.reason for c in result.left_out}
    assert left["parallel_map"].startswith("measured no gain: none (1.50x alone)")
    assert "map" in stage_kinds(result.dataset)


def test_a_changed_pipeline_is_refused_with_the_stage_that_differs():
    with pytest.raises(UsageError, match=r"stage 2 was map\(noisy\) \[MapDataset\] when diagnosed, "
                                         r"and is map\(expensive\) \[MapDataset\] now"):
        tuned(b.changed_function, scripted(b.serial_random_map))
    with pytest.raises(UsageError, match="batch\\(16\\).*batch\\(8\\)"):
        tuned(b.serial_random_map, scripted(b.serial_random_map), batch_size=8)


def test_a_diagnosis_without_a_tuned_mode_is_refused():
    with pytest.raises(UsageError, match="no tuned mode"):
        tuned(b.serial_random_map, make_diagnosis())


def test_tuned_returns_a_dataset_for_model_fit():
    dataset = tuned(b.serial_random_map, scripted(b.serial_random_map))
    assert isinstance(dataset, tf.data.Dataset)
    assert dataset.element_spec == b.serial_random_map(16).element_spec
