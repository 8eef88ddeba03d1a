"""What the scenarios share: the shape of an expected answer, a cached data folder, and small
makers for JPEG bytes and TFRecord shards.

Every scenario makes its data here, from fixed seeds, in seconds; nothing is downloaded. Data
lives in `$TMPDIR/pipediag-scenarios/<name>`, made once and reused (delete the folder to remake it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# Fix kinds that change the step, not the input: wrong for an input-bound pipeline.
STEP_FIXES = ("tf_function", "xla", "mixed_precision", "batch_size", "memory_growth")
# Fix kinds that change the input pipeline: wrong when the step is the limit.
INPUT_FIXES = (
    "prefetch", "parallel_map", "interleave", "cache", "vectorize_map", "snapshot", "tf_data_service", "threading",
)

# Fix kinds an expected answer may name that pipediag does not have yet: what it *should* say.
# (shuffle_buffer was one; pipediag has it now.)
PROPOSED_FIX_KINDS: tuple[str, ...] = ()


@dataclass(frozen=True)
class Expected:
    """The known answer of a scenario.

    bottleneck: input | compute | memory | host.
    stage: the stage at fault, as pipediag labels stages (`map(decode_jpeg)`); None when the
      bottleneck is not a stage of the pipeline.
    right_fixes: fix kinds that address the planted cause; a correct answer recommends at least
      one of them (when there are any).
    wrong_fixes: fix kinds that must not be recommended. `kind@stage` is wrong only at that stage
      (e.g. `cache@map(augment)`: a cache after the random augmentation).
    """

    bottleneck: str
    stage: str | None
    right_fixes: tuple[str, ...]
    wrong_fixes: tuple[str, ...]


def data_dir(name: str, make: Callable[[str], None]) -> str:
    """The scenario's data folder, made by `make(folder)` on first use. Made in a temporary
    sibling and renamed into place, so a crash or a concurrent run never sees half of it."""
    root = os.path.join(tempfile.gettempdir(), "pipediag-scenarios")
    final = os.path.join(root, name)
    if os.path.isdir(final):
        return final
    os.makedirs(root, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f".{name}-", dir=root)
    try:
        make(work)
        os.replace(work, final)
    except OSError:
        if not os.path.isdir(final):
            raise
    finally:
        if os.path.isdir(work):
            shutil.rmtree(work, ignore_errors=True)
    return final


def photo_like(rng: np.random.Generator, size: int) -> np.ndarray:
    """A uint8 image of smooth gradients plus noise: compresses like a photograph, not like noise."""
    y, x = np.mgrid[0:size, 0:size]
    base = (np.sin(x / rng.uniform(4, 16)) + np.cos(y / rng.uniform(4, 16))) * 60 + 128
    image = np.stack([base + rng.normal(0, 12, base.shape) for _ in range(3)], axis=-1)
    return np.clip(image, 0, 255).astype(np.uint8)


def jpeg_bytes(count: int, size: int, seed: int) -> list[bytes]:
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    return [tf.io.encode_jpeg(photo_like(rng, size), quality=90).numpy() for _ in range(count)]


def write_jpeg_shards(folder: str, shards: int, per_shard: int, size: int, seed: int) -> None:
    """TFRecord shards of tf.train.Example {image: JPEG bytes, label: int64}."""
    import tensorflow as tf

    jpegs = jpeg_bytes(per_shard, size, seed)  # distinct images, reused across shards to stay fast
    for shard in range(shards):
        path = os.path.join(folder, f"train-{shard:05d}-of-{shards:05d}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for i, jpeg in enumerate(jpegs):
                example = tf.train.Example(features=tf.train.Features(feature={
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[jpeg])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[(shard * per_shard + i) % 10])),
                }))
                writer.write(example.SerializeToString())


def shard_paths(folder: str) -> list[str]:
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".tfrecord"))
