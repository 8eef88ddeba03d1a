"""TensorFlow on the GPU, host-bound: a tiny Keras MLP (32 -> 64 -> 10) trained on batches of 8 on
KERAS_BACKEND=tensorflow with TensorFlow's GPU build, fed from memory (issue 25, item 2: "a tiny TF
step").

Each step is a handful of kernels of a few microseconds on 8 rows: the time goes to Keras' and
TensorFlow's per-call work on the host (the compiled train function's dispatch, the copy of each
batch to /GPU:0), not to the GPU. The same model and pipeline on JAX is tiny_step.py (host).
Expected answer and why: host (the GPU idles even with free input; the input alone keeps up, the
data being in memory), with more work per call as the fix (a bigger batch, several batches per
compiled call: Keras' steps_per_execution); never `cache` or another pipeline change.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected, vectors  # noqa: E402
from keras_input import keras_on  # noqa: E402

ENV = {"KERAS_BACKEND": "tensorflow"}  # set before Keras is first imported: the benchmarks run it so
EXPECTED = Expected(bottleneck="host", stage=None, right_fixes=("batch_size", "steps_per_call"),
                    wrong_fixes=INPUT_FIXES)

FEATURES = 32
HIDDEN = 64


def make_dataset(batch_size=8):
    return vectors(batch_size, FEATURES)


def expert_dataset(batch_size=8):
    """The pipeline is in memory and prefetched: an expert changes the training loop, not this."""
    return make_dataset(batch_size)


def make_model():
    keras = keras_on("tensorflow")
    model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(HIDDEN, activation="tanh"),
                              keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
