"""benchmarks/real_truth.py: the input/compute call from scripted numbers, and the prefix chain."""

import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _truth():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    spec = importlib.util.spec_from_file_location("pipediag_real_truth", os.path.join(ROOT, "benchmarks", "real_truth.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


truth = _truth()


def _run(free, input_alone):
    return {"scenario": "x", "free_steps_per_sec": free, "input_batches_per_sec": input_alone,
            "fed_steps_per_sec": min(free, input_alone), "expert_input_batches_per_sec": 100.0,
            "expert_fed_steps_per_sec": free, "prefixes": [{"stage": "a", "ms_per_final_batch": 1.0}]}


@pytest.mark.parametrize(("free", "input_alone", "call"), [
    (100.0, 70.0, "input"), (100.0, 160.0, "compute"), (100.0, 100.0, "edge (between 0.8x and 1.5x)"),
])
def test_the_call_follows_the_margins(free, input_alone, call):
    assert truth._merge([_run(free, input_alone)])["call"] == call


def test_repeats_give_the_median_and_range():
    merged = truth._merge([_run(100.0, 50.0), _run(120.0, 30.0), _run(80.0, 40.0)])
    assert merged["free_steps_per_sec"] == (100.0, 80.0, 120.0)
    assert merged["input_batches_per_sec"] == (40.0, 30.0, 50.0)
    assert merged["input_over_free"] == pytest.approx(0.4) and merged["call"] == "input"
    text = truth.markdown([merged], "cmd")
    assert "| x | 100.0 (80.0–120.0) | 40.0 (30.0–50.0) |" in text and "input" in text


def test_prefixes_run_from_the_source_to_the_dataset():
    tf = pytest.importorskip("tensorflow")

    def increment(x):
        return x + 1

    ds = tf.data.Dataset.range(10).map(increment).batch(4)
    chain = truth._prefixes(ds)
    assert [type(d).__name__.lstrip("_") for d in chain] == ["RangeDataset", "MapDataset", "BatchDataset"]
    assert "increment" in truth._label(chain[1]) and truth._label(chain[2]) == "BatchDataset(4)"
    assert truth._repeated(chain[0]).cardinality().numpy() == tf.data.INFINITE_CARDINALITY
