"""Input-bound, PyTorch step: a serial `tf.py_function` map that augments each 64x64 image in NumPy
(flip, normalise, a Python loop over the channels) feeding a PyTorch MLP training step on the GPU
(issue 14: a PyTorch step fed through a py_function map).

Each element takes one trip into Python (the GIL) and back; batches of 128 take milliseconds to
make on one thread, the step well under that. PyTorch gets NumPy batches (`--batch-format numpy`)
and copies them to the GPU itself.
Expected answer and why: input (the pipeline alone is slower than the step), at `map(augment)`;
right fixes: run it in parallel, or replace the per-element Python with TensorFlow ops on whole
batches (the expert's form below).
"""

import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import STEP_FIXES, Expected  # noqa: E402

BATCH_FORMAT = "numpy"  # the PyTorch step takes NumPy batches (--batch-format numpy)
EXPECTED = Expected(bottleneck="input", stage="map(augment)", right_fixes=("parallel_map", "vectorize_map"),
                    wrong_fixes=STEP_FIXES)

SIZE = 64
EXAMPLES = 2048
MEAN = np.array([0.485, 0.456, 0.406], "float32")
STD = np.array([0.229, 0.224, 0.225], "float32")


def _images():
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(EXAMPLES, SIZE, SIZE, 3), dtype=np.uint8), (np.arange(EXAMPLES) % 10).astype("int64")


def _augment_numpy(image):
    image = image.numpy()[:, ::-1].astype(np.float32) / 255.0
    out = np.empty_like(image)
    for c in range(3):  # per channel, in Python, as hand-written augmentations often are
        out[..., c] = (image[..., c] - MEAN[c]) / STD[c]
    return out


def augment(image, label):
    x = tf.py_function(_augment_numpy, [image], tf.float32)
    x.set_shape([SIZE, SIZE, 3])
    return x, label


def make_dataset(batch_size=128):
    images, labels = _images()
    return tf.data.Dataset.from_tensor_slices((images, labels)).repeat().map(augment).batch(batch_size)


def _augment_batch(images, labels):
    x = tf.cast(images[:, :, ::-1], tf.float32) / 255.0
    return (x - MEAN) / STD, labels


def expert_dataset(batch_size=128):
    """The same augmentation as TensorFlow ops on whole batches, in parallel, prefetched."""
    images, labels = _images()
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(batch_size)
    return ds.map(_augment_batch, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def make_step():
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(SIZE * SIZE * 3, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)

    def step(batch):
        x, y = (torch.tensor(v, device=device) for v in batch)  # one copy, straight to the device
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step
