"""--model with batches its loss cannot take is refused before any timing, saying what to change."""

import pytest

pytest.importorskip("tensorflow")

from pipediag.errors import UsageError  # noqa: E402
from pipediag.steps.keras_step import check_batch, keras_step  # noqa: E402
from tests.fixtures import bad_inputs as B  # noqa: E402


def first(dataset):
    return next(iter(dataset))


def test_batches_without_labels_name_the_loss_that_needs_them():
    with pytest.raises(UsageError) as info:
        keras_step(B.compiled_model(), "m.py:build", first_batch=first(B.inputs_only()))
    assert "the batches hold inputs only ((x,))" in info.value.message
    assert "SparseCategoricalCrossentropy" in info.value.message or "sparse_categorical" in info.value.message
    assert "yield (x, y) batches" in info.value.hint


def test_dict_batches_get_the_map_that_splits_off_the_label():
    with pytest.raises(UsageError) as info:
        check_batch(B.compiled_model(), first(B.dict_batches()), "m.py:build")
    assert "the batches are dicts ('x', 'label')" in info.value.message
    assert "d['label']" in info.value.hint


def test_a_tuple_of_four_is_refused_and_x_y_passes():
    model = B.compiled_model()
    batch = first(B.shape_by_arg())
    check_batch(model, batch, "m")  # (x, y): nothing to say
    with pytest.raises(UsageError, match="tuples of 4"):
        check_batch(model, (batch[0], batch[0], batch[0], batch[1]), "m")


def test_a_model_without_a_compiled_loss_may_take_inputs_only():
    import keras

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd")  # its loss comes from add_loss, if any
    check_batch(model, first(B.inputs_only()), "m")


def test_a_model_builder_returning_no_model_or_an_uncompiled_one_is_refused():
    import keras

    with pytest.raises(UsageError, match="returned a dict, not a Keras model") as info:
        keras_step({}, "m.py:build")
    assert "--step" in info.value.hint
    with pytest.raises(UsageError, match="is not compiled") as info:
        keras_step(keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)]), "m.py:build")
    assert "model.compile(" in info.value.hint


def test_a_step_factory_returning_no_function_is_refused():
    from pipediag.steps.user_step import user_step

    with pytest.raises(UsageError, match="returned a int, not a function") as info:
        user_step(3, "s.py:make_step", "tf")
    assert "factory" in info.value.hint


@pytest.mark.parametrize("jit", [False, True])
def test_the_step_says_whether_keras_compiled_it_with_xla(jit):
    """StepInfo.xla is the model's resolved jit_compile ("auto" is XLA on a GPU, not on a CPU-only
    machine): the fixes do not tell an XLA-compiled model to compile with XLA."""
    import keras

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", jit_compile=jit)
    info = keras_step(model, "m.py:build").info
    assert info.xla is jit
    assert f"(jit_compile={jit})" in info.description
