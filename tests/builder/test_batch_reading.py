"""Reading whether elements without a batch op are batches: the shape rules on given shapes, and
the Keras batch iterator found behind a generator without calling it."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.batch_reading import keras_source, read_shapes, spec_shapes, value_shapes  # noqa: E402


def test_images_and_labels_sharing_their_leading_size_read_as_a_batch():
    reading = read_shapes([("[0]", (32, 256, 256, 3)), ("[1]", (32, 5))])
    assert reading.batches is True and reading.rows == 32 and not reading.strong
    assert "[0]: [32,256,256,3]" in reading.why
    assert "--unbatched" in reading.note("the dataset")


def test_a_scalar_or_disagreeing_leading_sizes_read_as_single_examples():
    assert read_shapes([("[0]", (28, 28)), ("[1]", ())]).batches is False  # an image and its class
    assert read_shapes([("[0]", (32, 10)), ("[1]", (8, 5))]).batches is False


def test_one_component_or_only_vectors_cannot_be_told():
    assert read_shapes([("element", (16, 4))]).batches is None
    assert read_shapes([("['ids']", (128,)), ("['labels']", (128,))]).batches is None  # one sequence, or 128 scalars?


def test_the_batch_size_asked_for_or_a_keras_iterator_is_strong_evidence():
    assert read_shapes([("[0]", (64,)), ("[1]", (64,))], batch_size=64).strong
    assert read_shapes([("[0]", (64,)), ("[1]", (64,))], batch_size=32).batches is None
    keras = read_shapes([("element", (8, 3))], source="Keras' flow")
    assert keras.batches is True and keras.strong and "Keras' flow" in keras.why


def test_unknown_leading_sizes_ask_for_an_element():
    spec = (tf.TensorSpec([None, 10]), tf.TensorSpec([None]))
    reading = read_shapes(spec_shapes(spec))
    assert reading.batches is None and reading.needs_element
    element = (tf.zeros([16, 10]), tf.zeros([16], tf.int64))
    assert read_shapes(value_shapes(element)).rows == 16


def _labels_generator():
    for _ in range(3):
        yield np.zeros((4, 2), "float32"), np.zeros((4,), "int64")


SIGNATURE = (tf.TensorSpec([None, 2]), tf.TensorSpec([None], tf.int64))


def test_keras_flow_behind_a_generator_is_found_without_calling_it():
    images = tf.keras.preprocessing.image.ImageDataGenerator(rescale=1 / 255)
    x, y = np.zeros((8, 4, 4, 3), "float32"), np.zeros((8,), "int64")
    signature = (tf.TensorSpec([None, 4, 4, 3]), tf.TensorSpec([None], tf.int64))
    guide = tf.data.Dataset.from_generator(lambda: images.flow(x, y, batch_size=4), output_signature=signature)
    assert keras_source(guide) == "Keras' flow"
    iterator = images.flow(x, y, batch_size=4)

    def from_iterator():
        yield from iterator

    assert keras_source(tf.data.Dataset.from_generator(from_iterator, output_signature=signature)) == \
        "Keras' NumpyArrayIterator"
    assert keras_source(tf.data.Dataset.from_generator(_labels_generator, output_signature=SIGNATURE)) is None
