"""A step that runs out of memory at the chosen batch size (a real OOM, not a raised fake).

The model pools second-order features (bilinear pooling: the outer product of a 2,048-wide
hidden layer with itself, as in fine-grained image models). The outer product holds
batch x 2,048 x 2,048 floats: 16 MiB per example. At the chosen batch of 4,096 that is one
64 GiB tensor, more than this machine's 24 GiB: TensorFlow's allocator refuses it and the step
raises `ResourceExhaustedError`. (The kernel refuses an allocation that large outright under its
default overcommit heuristic, so nothing is touched and no other process is at risk; the
scenario checks that setting before it builds the model.) At a batch of 64 it needs 1 GiB.

Expected answer and why:
- bottleneck `memory`: the step cannot run at all at this batch size.
- stage: none — the pipeline is not involved.
- right: `batch_size` (memory grows linearly with it; the expert version uses 64).
- wrong: every input-side fix.
"""

import keras
import numpy as np
import tensorflow as tf
from _common import INPUT_FIXES, Expected

EXPECTED = Expected(
    bottleneck="memory",
    stage=None,
    right_fixes=("batch_size",),
    wrong_fixes=INPUT_FIXES,
)
DIAGNOSE_ARGS = ("--batch-size", "4096")

FEATURES, HIDDEN = 256, 2048
ROWS = 8192
_rng = np.random.default_rng(9)
_X = _rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
_Y = (np.arange(ROWS) % 10).astype(np.int64)


def _refuse_unless_safe():
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            mode = f.read().strip()
    except OSError:
        return
    if mode == "1":
        raise RuntimeError(
            "vm.overcommit_memory=1: the kernel would grant the 64 GiB allocation and the OOM killer "
            "would act later; this scenario only runs where an oversized allocation fails at once"
        )


def make_dataset(batch_size=4096):
    ds = tf.data.Dataset.from_tensor_slices((_X, _Y)).shuffle(ROWS).repeat()
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def expert_dataset(batch_size=4096):
    return make_dataset(64)  # the fix is the batch size, not the pipeline


class BilinearPool(keras.layers.Layer):
    def call(self, h):
        outer = tf.einsum("bi,bj->bij", h, h)  # batch x HIDDEN x HIDDEN: the memory
        return tf.reduce_mean(outer, axis=1)


def make_model():
    _refuse_unless_safe()
    model = keras.Sequential([
        keras.Input((FEATURES,)),
        keras.layers.Dense(HIDDEN, activation="relu"),
        BilinearPool(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
