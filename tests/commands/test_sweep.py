"""`pipediag sweep --precision`: the --model builder called under the Keras policy, the policy put
back, the precision recorded; refused for a step pipediag does not build."""

import argparse
import json

import pytest

from pipediag import cli

FIXTURES = "tests/fixtures/pipelines.py"


@pytest.mark.parametrize("given, what", [(["--step", f"{FIXTURES}:light_step"], "a --step function"),
                                         ([], "the stand-in step")])
def test_a_precision_for_a_step_pipediag_does_not_build_is_refused_before_anything_runs(given, what, capsys):
    # the target does not exist: the refusal comes before anything is loaded
    code = cli.main(["sweep", "missing.py:make", "--batch-sizes", "8,16", *given, "--precision", "mixed_float16"])
    assert code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"--precision mixed_float16 applies to a Keras model pipediag builds; {what}" in err
    assert "HINT: give the Keras model builder with --model" in err


def test_the_model_builder_is_called_under_the_policy_and_the_policy_put_back():
    pytest.importorskip("tensorflow")
    from pipediag.backends.tf import keras
    from pipediag.commands.common import options_from_args

    args = argparse.Namespace(model=f"{FIXTURES}:small_model", step=None, arg=[], batched=None, batch_format="tf",
                              sample_hz=10.0, stall_timeout=None, precision="mixed_float16")
    model = options_from_args(args).model
    assert model.dtype_policy.name == "mixed_float16" and model.layers[-1].compute_dtype == "float16"
    assert isinstance(model.optimizer, keras.mixed_precision.LossScaleOptimizer)
    assert keras.mixed_precision.dtype_policy().name == "float32"
    args.precision = None  # not given: the builder's own (Keras' default here)
    assert options_from_args(args).model.dtype_policy.name == "float32"


@pytest.mark.slow
def test_a_sweep_under_mixed_bfloat16_records_it_on_the_cpu(tmp_path, cli_main):
    """By the command line's `main` in this process (the tests' Keras runs on TensorFlow; the
    policy is put back, as the test above checks)."""
    pytest.importorskip("tensorflow")
    import keras

    assert keras.backend.backend() == "tensorflow"
    out = tmp_path / "sweep.json"
    done = cli_main("sweep", f"{FIXTURES}:small_vectors", "--model", f"{FIXTURES}:small_model", "--batch-sizes", "8,16",
                    "--max-seconds", "0.5", "--precision", "mixed_bfloat16", "--quiet", "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    d = json.loads(out.read_text())
    assert d["precision"] == "mixed_bfloat16" and d["precision_reason"] is None
    assert all(p["status"] == "ok" and p["examples_per_sec"] for p in d["points"]), d["points"]
    assert "precision: mixed_bfloat16 (the Keras model's dtype policy)" in done.stdout
    assert keras.mixed_precision.dtype_policy().name == "float32"
