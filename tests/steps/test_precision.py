"""steps/precision.py: a Keras dtype policy set while a model is built, the one before put back,
what a run records, and the refusals where pipediag cannot apply a precision."""

import pytest

from pipediag.api.baseline import MODELS, build_model
from pipediag.backends.tf import keras
from pipediag.errors import UsageError
from pipediag.steps.precision import (
    FLOAT32,
    built_under,
    cpu_note,
    policy,
    precision_of,
    recorded,
    refuse_for_step,
)


def small_model():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


@pytest.mark.parametrize("precision, half", [("mixed_float16", "float16"), ("mixed_bfloat16", "bfloat16")])
def test_the_reference_model_is_built_under_the_policy_and_the_global_one_is_put_back(precision, half):
    before = keras.mixed_precision.dtype_policy().name
    model = built_under(precision, lambda: build_model(MODELS["resnet20"]))
    assert keras.mixed_precision.dtype_policy().name == before == FLOAT32
    assert precision_of(model) == precision
    conv = next(layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D))
    assert conv.compute_dtype == half and conv.variable_dtype == "float32"
    assert sum(layer.compute_dtype == half for layer in model.layers) > 10  # not only the first conv
    # mixed_float16 trains with loss scaling (Keras' compile wraps the optimizer); bfloat16 needs none
    scaled = isinstance(model.optimizer, keras.mixed_precision.LossScaleOptimizer)
    assert scaled == (precision == "mixed_float16")
    # a model built after the block is float32 again
    assert precision_of(small_model()) == FLOAT32
    assert {layer.compute_dtype for layer in small_model().layers} == {"float32"}


def test_the_policy_is_put_back_when_the_builder_raises_and_nothing_changes_without_one():
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")  # a caller's own policy
    try:
        def broken():
            raise ValueError("the user's builder failed")

        with pytest.raises(ValueError, match="builder failed"):
            built_under("mixed_float16", broken)
        assert keras.mixed_precision.dtype_policy().name == "mixed_bfloat16"
        assert precision_of(built_under(None, small_model)) == "mixed_bfloat16"  # None: the policy set is used
        with policy(FLOAT32):
            assert keras.mixed_precision.dtype_policy().name == FLOAT32
        assert keras.mixed_precision.dtype_policy().name == "mixed_bfloat16"
    finally:
        keras.mixed_precision.set_dtype_policy(FLOAT32)


def test_an_unknown_precision_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown precision 'float16'") as error:
        built_under("float16", small_model)
    assert "mixed_float16" in error.value.hint


def test_what_a_run_records():
    fp16 = built_under("mixed_float16", small_model)
    assert recorded(None, fp16, None) == ("mixed_float16", None)
    assert recorded("mixed_float16", fp16, None) == ("mixed_float16", None)
    step_precision, reason = recorded(None, None, lambda batch: None)
    assert step_precision is None and "step function" in reason
    assert recorded(None, None, None)[0] is None
    with pytest.raises(UsageError, match="asked for, but the model was built under float32") as error:
        recorded("mixed_float16", small_model(), None)
    assert 'policy("mixed_float16")' in error.value.hint and "--precision mixed_float16" in error.value.hint


@pytest.mark.parametrize("step, what", [(lambda batch: None, "a step function"), (None, "the stand-in step")])
def test_a_precision_for_a_step_pipediag_does_not_build_is_refused(step, what):
    with pytest.raises(UsageError, match=f"applies to a Keras model pipediag builds; {what}") as error:
        recorded("mixed_bfloat16", None, step)
    assert "--model" in error.value.hint and "torch.autocast" in error.value.hint
    refuse_for_step(None, "a step function")  # nothing asked: nothing refused


def test_a_mixed_policy_on_the_cpu_is_noted_not_refused():
    assert cpu_note(FLOAT32, "tensorflow", "cpu") is None and cpu_note("mixed_float16", "tensorflow", "gpu") is None
    note = cpu_note("mixed_float16", "tensorflow", "cpu")
    assert "float16" in note and "not what it gains on a GPU" in note
