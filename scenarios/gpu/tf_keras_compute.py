"""TensorFlow on the GPU, compute-bound: the Keras MLP of keras_compute.py (six 16384-wide layers,
~2e13 FLOP per step at batch 2048) on KERAS_BACKEND=tensorflow with TensorFlow's GPU build, fed
from memory (issue 25, item 2).

Expected answer and why: compute (NVML busy near 100% with free input, GPM tensor activity), with
mixed precision and XLA as the step's fixes — the same answer as on JAX, through TensorFlow's own
step, device copy and memory statistics.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected, vectors  # noqa: E402
from keras_input import keras_on  # noqa: E402

ENV = {"KERAS_BACKEND": "tensorflow"}  # set before Keras is first imported: the benchmarks run it so
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
    keras = keras_on("tensorflow")
    layers = [keras.layers.Dense(WIDTH, activation="relu") for _ in range(LAYERS)]
    model = keras.Sequential([keras.Input((FEATURES,)), *layers, keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
