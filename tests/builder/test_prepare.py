"""From a builder to a dataset ready to time, for datasets without a visible batch op: the
TensorFlow guide's generator of Keras batches, Keras' dataset utilities (batched already), and
the flags that force either reading."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.prepare import prepare_dataset  # noqa: E402
from pipediag.errors import UsageError  # noqa: E402

CLASSES = ("daisy", "roses", "tulips")


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """A flowers-like folder: 3 classes x 4 small JPEGs."""
    root = tmp_path_factory.mktemp("flowers")
    rng = np.random.default_rng(0)
    for name in CLASSES:
        (root / name).mkdir()
        for i in range(4):
            pixels = tf.constant(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8))
            (root / name / f"{i}.jpg").write_bytes(tf.io.encode_jpeg(pixels).numpy())
    return str(root)


def _guide(root: str, shapes=([4, 16, 16, 3], [4, 3])):
    """The guide's own form ("tf.data: Build TensorFlow input pipelines", consuming Python generators)."""
    img_gen = tf.keras.preprocessing.image.ImageDataGenerator(rescale=1.0 / 255, rotation_range=20)
    return tf.data.Dataset.from_generator(
        lambda: img_gen.flow_from_directory(root, target_size=(16, 16), batch_size=4),
        output_types=(tf.float32, tf.float32), output_shapes=shapes,
    )


def test_the_guides_flow_from_directory_generator_is_read_as_batches(images):
    prepared = prepare_dataset(_guide(images), {}, None, None, 1)
    assert prepared.element.batch_size == 4
    assert [leaf.shape for leaf in prepared.element.leaves] == [(4, 16, 16, 3), (4, 3)]
    note = next(n for n in prepared.notes if "no batch() stage" in n)
    assert "Keras' flow_from_directory" in note and "--unbatched" in note


def test_declared_shapes_without_a_size_are_read_from_the_first_element(images):
    prepared = prepare_dataset(_guide(images, ([None, 16, 16, 3], [None, 3])), {}, None, None, 1)
    assert prepared.element.batch_size == 4 and any("batch of 4" in n for n in prepared.notes)


def test_unbatched_forces_the_other_reading(images):
    with pytest.raises(UsageError, match="single examples") as info:
        prepare_dataset(_guide(images), {}, None, False, 1)
    assert "--batch-size" in info.value.hint
    forced = prepare_dataset(_guide(images), {}, 2, False, 1)
    assert forced.element.batch_size == 2 and forced.element.leaves[0].shape == (None, 4, 16, 16, 3)


def test_a_generator_of_batches_without_keras_reads_by_its_shapes():
    def batches():
        for _ in range(4):
            yield np.zeros((8, 5), "float32"), np.zeros((8,), "int64")

    def make():
        signature = (tf.TensorSpec([None, 5]), tf.TensorSpec([None], tf.int64))
        return tf.data.Dataset.from_generator(batches, output_signature=signature)

    assert prepare_dataset(make, {}, None, None, 1).element.batch_size == 8
    # --batch-size given and only the shapes to go on: the user's size wins, and the note says why it may be wrong
    asked = prepare_dataset(make, {}, 2, None, 1)
    assert asked.element.batch_size == 2 and any("pass --batched if they are" in n for n in asked.notes)


def test_truly_ambiguous_elements_are_refused_with_what_was_seen():
    def sequences():
        return tf.data.Dataset.from_tensor_slices((np.zeros((10, 6), "int64"), np.zeros((10, 6), "int64")))

    with pytest.raises(UsageError, match="cannot tell") as info:
        prepare_dataset(sequences, {}, None, None, 1)
    assert "[0]: [6]" in info.value.message and "--batched" in info.value.hint


def _no_batch_note(prepared) -> bool:
    return not any("batch()" in n or "unbatched" in n for n in prepared.notes)


def test_keras_directory_utilities_are_batched_already(images, tmp_path):
    pictures = prepare_dataset(tf.keras.utils.image_dataset_from_directory, {"directory": images},
                               4, None, 1)
    assert pictures.element.batch_size == 4 and _no_batch_note(pictures)
    for i, name in enumerate(CLASSES):
        (tmp_path / name).mkdir()
        for j in range(3):
            (tmp_path / name / f"{j}.txt").write_text(f"review {i} {j} " * 5)
    texts = prepare_dataset(tf.keras.utils.text_dataset_from_directory, {"directory": str(tmp_path)}, 3, None, 1)
    assert texts.element.batch_size == 3 and _no_batch_note(texts)
    series = np.arange(200, dtype="float32").reshape(100, 2)
    windows = prepare_dataset(tf.keras.utils.timeseries_dataset_from_array,
                              {"data": series, "targets": None, "sequence_length": 10}, 16, None, 1)
    assert windows.element.batch_size == 16 and _no_batch_note(windows)
