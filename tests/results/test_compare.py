"""The comparison JSON: the documented contract and an exact round trip."""

import json

import pytest

from pipediag.errors import UsageError
from pipediag.records.files import load_json, write_json
from pipediag.results.compare import Comparison, is_comparison
from pipediag.results.diagnose import read_json
from tests.comparisons import comparison


def test_round_trip_is_exact(tmp_path):
    c = comparison(fail_if_slower=0.05)
    path = tmp_path / "cmp.json"
    write_json(c.to_dict(), str(path))
    data = load_json(str(path))
    assert is_comparison(data)
    again = Comparison.from_dict(data)
    assert again == c
    assert again.to_dict() == c.to_dict()


def test_json_has_the_documented_contract():
    data = comparison(fail_if_slower=0.05).to_dict()
    assert data["schema_version"] == 2 and data["kind"] == "comparison"
    main = data["comparison"]
    assert set(main) >= {"ratio", "ci_low", "ci_high", "verdict", "rounds", "percent_change", "effect_dz",
                         "confidence", "fail_if_slower", "regression", "stop_reason", "unit"}
    assert main["verdict"] == "faster" and main["rounds"] == 4 and main["ci_low"] < main["ratio"] < main["ci_high"]
    assert main["regression"] is False and main["fail_if_slower"] == 0.05
    assert data["input_only"]["verdict"] == "faster"
    assert set(data["sides"]) == {"A", "B"}
    assert set(data["sides"]["A"]["fed"]) >= {"rate", "steps", "input_wait_frac", "usage"}
    assert set(data["sides"]["A"]["fed"]["usage"]) >= {"cpu_util_pct", "gpu_util_pct", "gpu_util_reason"}
    assert [r["order"] for r in data["rounds"]] == ["AB", "BA", "AB", "BA"]
    assert data["settings"]["plan"]["looks"] == [4, 6, 9, 14, 21, 30]
    json.dumps(data, allow_nan=False)


def test_a_comparison_file_is_not_taken_for_a_diagnosis(tmp_path):
    path = tmp_path / "cmp.json"
    write_json(comparison().to_dict(), str(path))
    with pytest.raises(UsageError, match="holds a comparison, not a diagnosis"):
        read_json(str(path))


def test_a_diagnosis_is_not_taken_for_a_comparison():
    with pytest.raises(UsageError, match="not a pipediag comparison"):
        Comparison.from_dict({"schema_version": 1})
