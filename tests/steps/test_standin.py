"""The stand-in model on every kind of batch it can meet: it fits and trains, or says plainly
that it cannot (a UsageError with a HINT), never a Keras error from pipediag's own code."""

import pytest

pytest.importorskip("tensorflow")

from pipediag.errors import UsageError  # noqa: E402
from pipediag.steps.make import make_step  # noqa: E402
from tests.fixtures import bad_inputs as B  # noqa: E402


def trained(dataset, steps=4):
    """The stand-in for `dataset`, after a few real steps on its batches (shapes that change from
    batch to batch included); its losses."""
    batches = iter(dataset)
    first = next(batches)
    step = make_step(None, None, None, "tf", first, dataset.element_spec)
    losses = [float(step.run(first))] + [float(step.run(next(batches))) for _ in range(steps)]
    return step, losses


def test_a_batch_of_scalars_is_one_feature_per_example():
    step, losses = trained(B.scalars())
    assert step.info.kind == "standin" and "x (one number per example)" in step.info.description
    assert len(losses) == 5


def test_ragged_sparse_and_padded_inputs_are_read_as_row_counts_and_means():
    for dataset, labels in ((B.ragged_only(), "no labels"), (B.sparse_features(), "sparse cross-entropy"),
                            (B.padded_tokens(), "sparse cross-entropy")):
        step, _ = trained(dataset)
        assert "value count and mean of each row of" in step.info.description, step.info.description
        assert labels in step.info.description


def test_images_of_changing_size_share_one_cnn():
    from pipediag.backends.tf import tf

    sizes = tf.data.Dataset.from_tensor_slices([8, 12, 16, 8, 12]).map(lambda n: tf.ones([n, n, 3], tf.uint8))
    step, _ = trained(sizes.batch(1), steps=4)
    assert "2-layer CNN" in step.info.description


def test_a_label_beyond_the_first_batchs_classes_does_not_fail_the_step():
    from pipediag.backends.tf import tf

    growing = tf.data.Dataset.range(1000).map(lambda i: (tf.ones([4]), i)).batch(4)  # labels 0..3, then 4..7, ...
    step, losses = trained(growing)
    assert "over 4 classes" in step.info.description and len(losses) == 5


def test_string_only_inputs_are_a_usage_error_naming_them():
    with pytest.raises(UsageError) as info:
        trained(B.strings_only())
    assert "no numeric tensor" in info.value.message and "(x: string)" in info.value.message
    assert "--model" in info.value.hint and "TextVectorization" in info.value.hint


def test_strings_beside_numbers_are_ignored_and_said_so():
    from pipediag.backends.tf import tf

    mixed = tf.data.Dataset.from_tensor_slices({"text": ["a", "b"] * 8, "n": [1.0, 2.0] * 8}).batch(4)
    step, _ = trained(mixed.repeat())
    assert "ignored non-numeric inputs: ['text']" in step.info.description
