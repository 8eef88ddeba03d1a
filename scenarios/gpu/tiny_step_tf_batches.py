"""Host-bound at the hand-over, with TensorFlow batches: tiny_step.py's jitted JAX MLP on batches of
8, but the step takes the default `--batch-format tf` and converts each batch itself
(`jnp.asarray(np.asarray(x))`), as many tf.data-to-JAX loops do (issue 25, item 4, first miss).

On the H200 (2026-12-02) pipediag's hand-over measurement failed on this step: its device copy gave
TensorFlow tensors to `jax.device_put` ("Cannot interpret 'tf.float32' as a data type"), blamed
the user's step, and the verdict fell back to "input (high)" although input alone ran 2.2x the
free step. The device copy now converts what the feed yields in every batch format.
Expected answer and why: host, as tiny_step's (the pipeline alone keeps up; the wait is the
hand-over of a ready batch); never `cache` (the data is in memory already).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import INPUT_FIXES, Expected  # noqa: E402
from tiny_step import expert_dataset, make_dataset  # noqa: E402, F401  (the same pipeline)
from tiny_step import make_step as numpy_step  # noqa: E402

BATCH_FORMAT = "tf"  # TensorFlow tensors, converted by the step itself
EXPECTED = Expected(bottleneck="host", stage=None, right_fixes=("batch_size", "steps_per_call", "device_prefetch"),
                    wrong_fixes=INPUT_FIXES)


def make_step():
    import jax.numpy as jnp

    inner = numpy_step()

    def step(batch):
        x, y = batch
        return inner((jnp.asarray(np.asarray(x)), jnp.asarray(np.asarray(y))))

    return step
