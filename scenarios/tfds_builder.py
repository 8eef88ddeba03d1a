"""A tensorflow-datasets pipeline: a tfds builder of our own, read with tfds' own API.

`ShapesDataset` is a `tfds.core.GeneratorBasedBuilder` that makes 512 JPEG-encoded 128x128 images
with labels from a fixed seed. It is prepared once into a temporary `data_dir` (no downloads),
then read as any tfds user reads a dataset: `tfds.load("pipediag_shapes", data_dir=...)`. tfds
reads the shards and decodes the JPEGs itself, in parallel; the user then augments each image in
`map(augment)` (random crop, flip, JPEG-quality artefacts, brightness), which draws random numbers,
so TensorFlow leaves it serial.

Expected answer and why:
- bottleneck `input`: the serial augmentation feeds fewer batches than the small CNN takes.
- stage `map(augment)`: tfds' own stages (shard interleave, decode) already run in parallel.
- right: `parallel_map` (the augmentation is per image). tfds itself already caches the decoded
  images (it caches small datasets after decoding), but its own stages after that cache (the
  `as_supervised` map and a prefetch) still run per element every epoch: a `cache` after them
  is right too, and small (the expert's cache there made it 6-8% faster in a `pipediag.compare`
  run on the 2-core machine). `prefetch` is fine but not the answer.
- wrong: `cache@map(augment)` (would replay one epoch's random crops and artefacts), step-side fixes.

The same prepared folder can be diagnosed directly: `pipediag diagnose tfds:pipediag_shapes
--data-dir DIR --batch-size 32` (the folder is printed by `python scenarios/tfds_builder.py`).
"""

import keras
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
from _common import STEP_FIXES, Expected, data_dir, photo_like

EXPECTED = Expected(
    bottleneck="input",
    stage="map(augment)",
    right_fixes=("parallel_map", "cache"),
    wrong_fixes=("cache@map(augment)",) + STEP_FIXES,
)

IMAGES, SIZE, CROP = 512, 128, 112


class ShapesDataset(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """512 photo-like 128x128 JPEGs with 10 labels, made from a fixed seed."""

    name = "pipediag_shapes"
    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict({
                "image": tfds.features.Image(shape=(SIZE, SIZE, 3), encoding_format="jpeg"),
                "label": tfds.features.ClassLabel(num_classes=10),
            }),
            supervised_keys=("image", "label"),
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        rng = np.random.default_rng(10)
        for i in range(IMAGES):
            yield i, {"image": photo_like(rng, SIZE), "label": i % 10}


def _prepare(folder):
    tfds.disable_progress_bar()
    ShapesDataset(data_dir=folder).download_and_prepare()


def prepared_data_dir():
    return data_dir("tfds_builder-v1", _prepare)


def augment(image, label):
    image = tf.image.random_crop(image, [CROP, CROP, 3])
    image = tf.image.random_flip_left_right(image)
    # Compression artefacts: re-encode at a random JPEG quality (libjpeg, one core per image).
    image = tf.image.random_jpeg_quality(image, 30, 95)
    image = tf.image.convert_image_dtype(image, tf.float32)
    return tf.image.random_brightness(image, 0.2), label


def _load():
    return tfds.load("pipediag_shapes", split="train", data_dir=prepared_data_dir(), as_supervised=True,
                     download=False)


def make_dataset(batch_size=32):
    return _load().repeat().map(augment).batch(batch_size)


def expert_dataset(batch_size=32):
    ds = _load().cache().repeat().map(augment, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


EXPERT_WARMUP_BATCHES = IMAGES // 32  # one epoch: fills the expert's cache before timing


def make_model():
    model = keras.Sequential([
        keras.Input((CROP, CROP, 3)),
        keras.layers.Conv2D(8, 3, strides=4, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    print(prepared_data_dir())
