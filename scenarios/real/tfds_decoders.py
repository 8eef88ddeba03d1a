"""A tensorflow-datasets builder read with tfds.load, then a random 64x64 crop in the user's map.

Sources: the tfds guide "Customizing feature decoding" (tensorflow/datasets docs/decode.md,
https://www.tensorflow.org/datasets/decode): "The main use case is to skip the image decoding for
better performance", with `tfds.decode.SkipDecoding()` and a `tfds.decode.make_decoder()` whose
`decode_example(serialized_image, feature)` calls `tf.image.decode_and_crop_jpeg` with a
`[crop_y, crop_x, crop_height, crop_width]` window; the builder follows the tfds guide
"Writing custom datasets" (a `tfds.core.GeneratorBasedBuilder` with `tfds.features.Image`).

The user's form: `tfds.load(...)` decodes each whole 448x448 JPEG in tfds' own decode stage, then
the user's `random_crop_64` keeps a 64x64 window of it. The expert form is the guide's: the image
feature is left encoded (`decoders={'image': tfds.decode.SkipDecoding()}`) and the user's map
decodes only a random 64x64 window with `tf.image.decode_and_crop_jpeg` (the guide's example with
its fixed `crop_y, crop_x` replaced by a random offset, as the random crop needs); libjpeg then
decodes only the rows that hold the window.

Changed to run here: the builder makes 256 photo-like 448x448 JPEGs from a fixed seed (ImageNet
photos are ~400x350 on average), prepared once into a temporary data_dir, nothing downloaded.
`read_config=tfds.ReadConfig(try_autocache=False)` in both forms: tfds caches a dataset this small
(it would not cache ImageNet), and the case stands for a dataset too large for that.

Expected answer and why (plain-TF measurements, benchmarks/real_truth.py, see MEASURED below):
- bottleneck `input`: decoding whole 448x448 JPEGs feeds fewer batches than the small CNN takes.
- stage `parallel_map(parse_and_decode)`: tfds' own decode stage (parse the Example, decode the
  JPEG), the step up that costs most among the prefixes (see MEASURED).
- right: `decode_crop` (decode only the window: what the expert form does).
- wrong: `cache@map(random_crop_64)` (would replay one epoch's random crops), step-side fixes.

MEASURED (2026-12-01, the shared 2-core machine, `flock /tmp/pipediag-cpu.lock python
benchmarks/real_truth.py scenarios/real/tfds_decoders.py --seconds 4 --repeats 2`; median (range)
of the 2 runs, per second): free step 36.7 (30.0-43.5) steps; input alone 6.3 (3.9-8.8) batches;
fed 5.9 (5.6-6.2) steps; expert alone 12.8 (10.3-15.4) batches; expert fed 8.1 (4.9-11.2) steps.
Input alone / free step = 0.17: input. The windowed decode doubles the input rate (libjpeg still
entropy-decodes every row above the window) and the expert form is still input-bound.
Prefixes (ms per batch of 64): tfds' reading (interleave over the shard, cardinality, options)
<= 102 ms; with `parallel_map(parse_and_decode)` 557 ms (+456); the later stages (tfds'
`map(lookup_nest)`, its prefetch, repeat, the crop, the batch) add no decode.
"""

import os
import sys

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import keras  # noqa: E402
from _common import STEP_FIXES, Expected, data_dir, photo_like  # noqa: E402

IMAGES, SIZE, CROP = 256, 448, 64

# The case stands for ImageNet (~700 GB decoded, too large to cache in memory): 256 decoded 448x448
# images here are ~154 MB, so a RAM budget under that makes pipediag judge the cache as it would
# judge ImageNet's (issue 13: without it, `cache` x5.3 after tfds' decode was offered and measured
# right for this small stand-in, and it hid the windowed decode).
DIAGNOSE_ARGS = ("--ram-budget-mb", "100")

EXPECTED = Expected(
    bottleneck="input",
    stage="parallel_map(parse_and_decode)",
    right_fixes=("decode_crop",),
    wrong_fixes=("cache@map(random_crop_64)",) + STEP_FIXES,
)


class PhotosDataset(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """256 photo-like 448x448 JPEGs with 10 labels, made from a fixed seed."""

    name = "pipediag_real_photos"
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
        rng = np.random.default_rng(448)
        for i in range(IMAGES):
            yield i, {"image": photo_like(rng, SIZE), "label": i % 10}


def _prepare(folder):
    tfds.disable_progress_bar()
    PhotosDataset(data_dir=folder).download_and_prepare()


def prepared_data_dir():
    return data_dir("real-tfds_decoders-v1", _prepare)


READ_CONFIG = tfds.ReadConfig(try_autocache=False)


def random_crop_64(image, label):
    image = tf.image.random_crop(image, [CROP, CROP, 3])
    return tf.cast(image, tf.float32) / 255.0, label


def make_dataset(batch_size=64):
    ds = tfds.load("pipediag_real_photos", split="train", data_dir=prepared_data_dir(), as_supervised=True,
                   download=False, read_config=READ_CONFIG)
    return ds.repeat().map(random_crop_64).batch(batch_size)


def decode_and_random_crop_64(serialized_image, label):
    shape = tf.image.extract_jpeg_shape(serialized_image)
    crop_y = tf.random.uniform([], 0, shape[0] - CROP + 1, dtype=tf.int32)
    crop_x = tf.random.uniform([], 0, shape[1] - CROP + 1, dtype=tf.int32)
    image = tf.image.decode_and_crop_jpeg(serialized_image, [crop_y, crop_x, CROP, CROP], channels=3)
    return tf.cast(image, tf.float32) / 255.0, label


def expert_dataset(batch_size=64):
    ds = tfds.load("pipediag_real_photos", split="train", data_dir=prepared_data_dir(), as_supervised=True,
                   download=False, read_config=READ_CONFIG, decoders={"image": tfds.decode.SkipDecoding()})
    ds = ds.repeat().map(decode_and_random_crop_64, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def make_model():
    model = keras.Sequential([
        keras.Input((CROP, CROP, 3)),
        keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
        keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


if __name__ == "__main__":
    print(prepared_data_dir())
