"""The built-in example behind `pipediag diagnose --demo`: a common, slow image pipeline.

JPEG images (made here, in memory, from a fixed seed: nothing is downloaded) are decoded and
augmented in one `map` with random ops. TensorFlow leaves maps with random ops serial, so the
decode runs on one core while the model waits — the classic input bottleneck.
"""

from __future__ import annotations

import numpy as np

from pipediag.backends.tf import tf

JPEG_SIZE = 256  # stored size; decoded, then resized to IMAGE_SIZE for the model
IMAGE_SIZE = 64
DISTINCT_IMAGES = 64


def _jpegs(count: int, size: int, seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    # Smooth gradients plus noise compress like photographs, unlike pure noise.
    y, x = np.mgrid[0:size, 0:size]
    out = []
    for _ in range(count):
        base = (np.sin(x / rng.uniform(4, 16)) + np.cos(y / rng.uniform(4, 16))) * 60 + 128
        image = np.stack([base + rng.normal(0, 12, base.shape) for _ in range(3)], axis=-1)
        out.append(tf.io.encode_jpeg(np.clip(image, 0, 255).astype(np.uint8), quality=90).numpy())
    return out


def decode_and_augment(jpeg, label):
    image = tf.io.decode_jpeg(jpeg, channels=3)
    image = tf.image.resize(image, [IMAGE_SIZE, IMAGE_SIZE]) / 255.0
    image = tf.image.random_flip_left_right(image)
    image = tf.image.random_brightness(image, 0.2)
    return image, label


def make_dataset(batch_size: int = 32, images: int = DISTINCT_IMAGES, parallel: bool = False):
    """A batched dataset of (image float32[64,64,3], label int64), endless (repeat).

    parallel=True runs the decode in parallel (the fix `diagnose --demo` recommends), so that
    `pipediag compare pipediag.demo:make_dataset --arg-b parallel=True` has something to find.
    """
    jpegs = _jpegs(images, JPEG_SIZE)
    labels = np.arange(images, dtype=np.int64) % 10
    ds = tf.data.Dataset.from_tensor_slices((jpegs, labels)).repeat()
    ds = ds.map(decode_and_augment, num_parallel_calls=tf.data.AUTOTUNE if parallel else None)
    return ds.batch(batch_size)
