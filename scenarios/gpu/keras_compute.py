"""Keras 3 on JAX, compute-bound: a compiled Keras MLP (`--model`, KERAS_BACKEND=jax) of six
16384-wide layers, ~2e13 FLOP per step at batch 2048, fed from memory (issue 14, item 3).

A batch is 2 MiB on the wire (2048 x 256 float32): Keras' JAX adapter copies it to NumPy and the
train step copies it to the GPU in about a millisecond, while the step takes tens of
milliseconds of matmuls (XLA, TF32 on the tensor cores). `train_on_batch` returns NumPy logs, so
each step is timed to its end.
Expected answer and why: compute (NVML busy ~100% with free input; the wait, if any, is the
hand-over, not the pipeline), with mixed precision and XLA as the step's fixes.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected, vectors  # noqa: E402
from keras_input import keras_on  # noqa: E402

ENV = {"KERAS_BACKEND": "jax"}  # set before Keras is first imported: the benchmarks run it so
EXPECTED = Expected(bottleneck="compute", stage=None, right_fixes=("mixed_precision", "xla"), wrong_fixes=INPUT_FIXES)

FEATURES = 256
WIDTH = 16384
LAYERS = 6


def make_dataset(batch_size=2048):
    return vectors(batch_size, FEATURES)


def expert_dataset(batch_size=2048):
    """The input is in memory and prefetched already: the step is the limit, nothing to change here."""
    return make_dataset(batch_size)


def make_model():
    keras = keras_on("jax")
    layers = [keras.layers.Dense(WIDTH, activation="relu") for _ in range(LAYERS)]
    model = keras.Sequential([keras.Input((FEATURES,)), *layers, keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
