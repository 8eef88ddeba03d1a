"""Telling per-element random draws from per-call ones in the user's traced functions."""

import pytest

tf = pytest.importorskip("tensorflow")

from pipediag.builder.functions import per_call_draws, user_functions  # noqa: E402

GENERATOR = None


def jitter(x):
    return tf.cast(x, tf.float32) + tf.random.uniform(tf.shape(x), -0.1, 0.1)


def scaled_jitter(x):
    y = tf.cast(x, tf.float32) * 2.0
    return y * tf.random.normal(tf.shape(y))


def from_generator(x):
    return tf.cast(x, tf.float32) + GENERATOR.uniform(tf.shape(x))


def coin(x):
    return tf.cast(x, tf.float32) + tf.random.uniform([])


def flip(x):
    return tf.image.random_flip_left_right(tf.fill([4, 4, 1], tf.cast(x, tf.float32)))


def crop(x):
    return tf.image.random_crop(tf.fill([8, 8, 1], tf.cast(x, tf.float32)), [4, 4, 1])


def first_row_only(x):
    return tf.fill([3], tf.cast(x, tf.float32)) + tf.random.uniform(tf.shape(tf.fill([3], 1.0)))


def function_of(fn):
    ds = tf.data.Dataset.range(8).map(fn)
    (function,) = user_functions(ds).values()
    return function


@pytest.mark.parametrize("fn", [jitter, scaled_jitter, from_generator])
def test_draws_shaped_like_the_input_are_per_element(fn):
    global GENERATOR
    GENERATOR = tf.random.Generator.from_seed(1)
    assert per_call_draws(function_of(fn)) is None


@pytest.mark.parametrize("fn, why", [
    (coin, "of a constant shape (RandomUniform): one draw per call"),
    (flip, "of a constant shape (RandomUniform): one draw per call"),
    (crop, "(RandomUniformInt): one draw per call"),
    (first_row_only, "one draw per call"),
])
def test_draws_of_a_fixed_shape_are_per_call(fn, why):
    reason = per_call_draws(function_of(fn))
    assert reason is not None and why in reason
