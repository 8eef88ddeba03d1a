"""The TF tutorial "TFRecord and tf.train.Example", its image walkthrough, read to train a model.

Source: tensorflow/docs site/en/tutorials/load_data/tfrecord.ipynb
(https://www.tensorflow.org/tutorials/load_data/tfrecord), "Walkthrough: Reading and writing
image data": the records are written by its `image_example(image_string, label)` (height, width,
depth, label, image_raw as a tf.train.Example), read with `tf.data.TFRecordDataset(
'images.tfrecords')` and parsed one element at a time by `_parse_image_function`
(`tf.io.parse_single_example` with `image_feature_description`), as the tutorial writes them.

Changed to run here: the tutorial's two downloaded photos become 600 photo-like JPEGs of 320x213
(the size of its cat photo) with 10 labels, written locally in the tutorial's format to one
`images.tfrecords`. The tutorial stops at displaying `image_raw`; to train on it, the user's map
`decode_image` decodes the JPEG and resizes it to 128x128 (tf.image.resize) with the label, then
batch(32) and repeat(). The model is a small CNN (the tutorial has none). The expert form is what
the tf.data performance guide (site/en/guide/data_performance.ipynb, "Best practice summary")
recommends for it: parallel maps, `cache()` after the deterministic parse and decode (600 images
of 128x128x3 float32 are 112 MiB), prefetch.

Expected answer and why (plain-TF measurements, benchmarks/real_truth.py, see MEASURED below):
- bottleneck `input`: decoding and resizing every photo each epoch feeds fewer batches than the
  CNN takes.
- stage `map(decode_image)`: the JPEG decode and resize cost most among the prefixes; parsing the
  Example is cheap next to it (see MEASURED).
- right: `cache` (the decoded images are the same every epoch). The expert's explicit
  `num_parallel_calls` is neither right nor wrong: both maps are stateless, and TensorFlow's
  `map_parallelization` optimization (on by default) already runs them in parallel.
- wrong: step-side fixes.

MEASURED (2026-12-01, the shared 2-core machine, `flock /tmp/pipediag-cpu.lock python
benchmarks/real_truth.py scenarios/real/tf_tfrecord.py --seconds 3 --prefix-seconds 2 --repeats
2`; median (range) of the 2 runs, per second): free step 69.5 (57.5-81.4) steps; input alone 40.7
(30.6-50.7) batches; fed 27.7 (22.9-32.5) steps; expert alone 1112 (1020-1204) batches; expert
fed 66.9 (59.2-74.7) steps. Input alone / free step = 0.58: input; the expert form feeds the step
2.4x faster. Prefixes (ms per batch of 32): TFRecord reading 3.1 ms, + `map(_parse_image_function)`
1.6 ms, + `map(decode_image)` 18.3 ms; batch and repeat add nothing. (A first version with twice
the CNN's filters took 50 ms a step and measured 1.44, an edge case: the model was halved.)
"""

import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import keras  # noqa: E402
from _common import STEP_FIXES, Expected, data_dir, photo_like  # noqa: E402

EXPECTED = Expected(
    bottleneck="input",
    stage="map(decode_image)",
    right_fixes=("cache",),
    wrong_fixes=STEP_FIXES,
)

IMAGES = 600


def _bytes_feature(value):
    """Returns a bytes_list from a string / byte."""
    if isinstance(value, type(tf.constant(0))):
        value = value.numpy()  # BytesList won't unpack a string from an EagerTensor.
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _int64_feature(value):
    """Returns an int64_list from a bool / enum / int / uint."""
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def image_example(image_string, label):
    image_shape = tf.io.decode_jpeg(image_string).shape

    feature = {
        'height': _int64_feature(image_shape[0]),
        'width': _int64_feature(image_shape[1]),
        'depth': _int64_feature(image_shape[2]),
        'label': _int64_feature(label),
        'image_raw': _bytes_feature(image_string),
    }

    return tf.train.Example(features=tf.train.Features(feature=feature))


def _make(folder):
    rng = np.random.default_rng(213)
    record_file = os.path.join(folder, 'images.tfrecords')
    with tf.io.TFRecordWriter(record_file) as writer:
        for i in range(IMAGES):
            image_string = tf.io.encode_jpeg(photo_like(rng, 320)[:213], quality=90).numpy()
            tf_example = image_example(image_string, i % 10)
            writer.write(tf_example.SerializeToString())


def _record_file():
    return os.path.join(data_dir("real-tf_tfrecord-v1", _make), 'images.tfrecords')


# Create a dictionary describing the features.
image_feature_description = {
    'height': tf.io.FixedLenFeature([], tf.int64),
    'width': tf.io.FixedLenFeature([], tf.int64),
    'depth': tf.io.FixedLenFeature([], tf.int64),
    'label': tf.io.FixedLenFeature([], tf.int64),
    'image_raw': tf.io.FixedLenFeature([], tf.string),
}


def _parse_image_function(example_proto):
    # Parse the input tf.Example proto using the dictionary above.
    return tf.io.parse_single_example(example_proto, image_feature_description)


def decode_image(image_features):
    image = tf.io.decode_jpeg(image_features['image_raw'], channels=3)
    image = tf.image.resize(image, [128, 128]) / 255.0
    return image, image_features['label']


def make_dataset(batch_size=32):
    raw_image_dataset = tf.data.TFRecordDataset(_record_file())
    parsed_image_dataset = raw_image_dataset.map(_parse_image_function)
    return parsed_image_dataset.map(decode_image).batch(batch_size).repeat()


def expert_dataset(batch_size=32):
    raw_image_dataset = tf.data.TFRecordDataset(_record_file())
    parsed_image_dataset = raw_image_dataset.map(_parse_image_function, num_parallel_calls=tf.data.AUTOTUNE)
    ds = parsed_image_dataset.map(decode_image, num_parallel_calls=tf.data.AUTOTUNE).cache()
    return ds.batch(batch_size).repeat().prefetch(tf.data.AUTOTUNE)


EXPERT_WARMUP_BATCHES = IMAGES // 32 + 1  # one epoch: fills the expert's cache before timing


def make_model():
    model = keras.Sequential([
        keras.Input((128, 128, 3)),
        keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
