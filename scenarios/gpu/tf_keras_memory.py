"""TensorFlow on the GPU, out of memory: a Keras MLP (KERAS_BACKEND=tensorflow, the GPU build)
whose first layer's activations need 64 MiB per example (16M float32): 256 GiB at batch 4096,
beyond the H200's 141 GiB, while its weights take 4 GiB; TensorFlow's own ResourceExhaustedError
comes inside the first train step (issue 25, item 2). (`pipediag sweep --gpu-memory-limit` shows
the same edge on a smaller logical device.)

Expected answer and why: memory (high confidence), with a smaller batch, gradient accumulation and
mixed precision as fixes; never an input fix.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected, vectors  # noqa: E402
from keras_input import keras_on  # noqa: E402

ENV = {"KERAS_BACKEND": "tensorflow"}  # set before Keras is first imported: the benchmarks run it so
EXPECTED = Expected(bottleneck="memory", stage=None, right_fixes=("batch_size", "gradient_accumulation"),
                    wrong_fixes=INPUT_FIXES)

FEATURES = 64
WIDTH = 2**24  # 16M activations per example: 64 MiB in float32


def make_dataset(batch_size=4096):
    return vectors(batch_size, FEATURES, examples=1024)


def expert_dataset(batch_size=256):
    """A smaller batch until the step fits (256 x 64 MiB = 16 GiB of activations, a few copies)."""
    return make_dataset(batch_size)


def make_model():
    keras = keras_on("tensorflow")
    model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(WIDTH, use_bias=False),
                              keras.layers.Lambda(lambda t: t[:, :10])])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
