import json
from dataclasses import replace

import pytest

from pipediag.errors import UsageError
from pipediag.records.files import write_json
from pipediag.records.header import SCHEMA_VERSION
from pipediag.records.phases import Phase
from pipediag.results.diagnose import Diagnosis, read_json
from tests.report.test_terminal import FIX, VERDICT
from tests.summaries import diagnosis


def test_round_trip_is_exact(tmp_path):
    d = diagnosis(verdict=VERDICT, fixes=[FIX])
    path = tmp_path / "run.json"
    write_json(d.to_dict(), str(path))
    again = read_json(str(path))
    assert again == d
    assert again.to_dict() == d.to_dict()


def test_json_has_the_documented_contract(tmp_path):
    data = diagnosis(verdict=VERDICT, fixes=[FIX]).to_dict()
    assert data["schema_version"] == SCHEMA_VERSION == 2
    assert data["pipediag_version"] and data["environment"]["cpu_logical"] == 2
    for name in ("synthetic", "pipeline", "input_only", "tuned"):
        mode = data["modes"][name]
        assert set(mode) >= {"batches_per_sec", "step_ms", "steps", "cpu_util_pct", "gpu_util_pct"}
        assert set(mode["step_ms"]) >= {"median", "p90"}
    assert set(data["verdict"]) >= {"bottleneck", "confidence", "evidence"}
    assert set(data["fixes"][0]) >= {"kind", "stage", "title", "code", "measured_speedup"}
    json.dumps(data, allow_nan=False)  # strict JSON: no NaN or Infinity anywhere


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "out" / "run.json"
    write_json({"a": 1}, str(path))
    write_json({"a": 2}, str(path))
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in path.parent.iterdir()] == ["run.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "run.json"
    write_json({"a": 1}, str(path))
    with pytest.raises(ValueError):
        write_json({"a": float("nan")}, str(path))
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_phases_round_trip_and_a_version_1_file_reads_without_them():
    d = replace(diagnosis(verdict=VERDICT), phases=(Phase("first_batch", 0.3), Phase("synthetic", 4.0)))
    data = d.to_dict()
    assert data["phases"] == [{"name": "first_batch", "seconds": 0.3}, {"name": "synthetic", "seconds": 4.0}]
    assert Diagnosis.from_dict(data) == d
    old = {k: v for k, v in data.items() if k != "phases"} | {"schema_version": 1}
    assert Diagnosis.from_dict(old).phases == ()


def test_other_schema_versions_are_refused(tmp_path):
    data = diagnosis().to_dict()
    data["schema_version"] = 99
    with pytest.raises(UsageError, match="schema_version 99"):
        Diagnosis.from_dict(data)


def test_bad_files_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        read_json(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        read_json(str(bad))


def test_gpu_fields_round_trip_exactly(tmp_path):
    from dataclasses import replace

    from pipediag.records.memory import FrameworkMemory
    from pipediag.records.readings import CpuReading, GpuReading, Sample
    from pipediag.records.step import StepInfo
    from tests.report.test_terminal import gpu_diagnosis

    d = gpu_diagnosis(gpu_metrics={"gpm_sm_active_pct": "GPM (nvmlGpmMetricsGet)"},
                      gpu_metric_reasons={"util_samples_pct": "Not Supported"})
    cpu = CpuReading(50.0, (60.0, 40.0), 100.0, 0.0, 2**30, 2**33, 2**34)
    gpu = GpuReading(0, 97.0, 2**30, 2**34, 300.0, 1980.0, 3201.0, (95.0, 99.0), 1e6, 2e6, 3 * 2**30, 91.0, 40.0, 63.0,
                     28.0, 5.0, None)
    runs = {name: replace(run, device_memory=FrameworkMemory("jax", "Device.memory_stats()", "cuda:0", 5, 4, 10, "mode"))
            for name, run in d.runs.items()}
    d = replace(d, runs=runs, samples=replace(d.samples, samples=(Sample(5, cpu, (gpu,)),)),
                step=StepInfo("user", "s", "dlpack", "jax", "block_until_ready() on the step's JAX arrays"))
    path = tmp_path / "gpu.json"
    write_json(d.to_dict(), str(path))
    again = read_json(str(path))
    assert again == d
    data = json.loads(path.read_text())
    assert data["modes"]["synthetic"]["gpu"]["gpm"]["sm_active_pct"] == 91.0
    assert data["modes"]["synthetic"]["peak_memory"]["source"] == "jax Device.memory_stats()"
    assert data["samples"]["samples"][0]["gpus"][0]["util_samples_pct"] == [95.0, 99.0]
    assert data["samples"]["gpu_metrics"] == {"gpm_sm_active_pct": "GPM (nvmlGpmMetricsGet)"}
    assert data["step"]["framework"] == "jax"


def test_anatomy_and_ablation_round_trip(tmp_path):
    from pipediag.analysis.ablation import VariantResult, conclude
    from tests.summaries import anatomy_and_stages

    anatomy, stages = anatomy_and_stages()
    ablation = conclude(50.0, (48.0, 52.0), [("parallel_map@n", "parallel_map", "map(decode_example)")],
                        [VariantResult("t", "together", ("parallel_map@n",), 150.0, (145.0, 155.0), 100, "stable")], 3.0)
    d = diagnosis(verdict=VERDICT, fixes=[FIX], anatomy=anatomy, ablation=ablation, stages=stages)
    path = tmp_path / "run.json"
    write_json(d.to_dict(), str(path))
    again = read_json(str(path))
    assert again == d
    data = json.loads(path.read_text())
    assert data["anatomy"]["bottleneck_stage"] == "map(decode_example)" == again.bottleneck_stage
    assert data["anatomy"]["waterfall"][1]["elements_per_batch"] == 16
    assert data["dataset"]["stages"][1]["cardinality"] == "infinite"
    assert data["tuning"]["ablation"]["effects"][0]["speedup"] == 3.0
