"""The TF tutorial "Load and preprocess images", its tf.data part ("Using tf.data for finer control").

Source: tensorflow/docs site/en/tutorials/load_data/images.ipynb
(https://www.tensorflow.org/tutorials/load_data/images). Kept as the tutorial writes them:
`list_files(..., shuffle=False)` then `list_ds.shuffle(image_count, reshuffle_each_iteration=False)`,
the 80/20 split with skip/take, `get_label`, `decode_img` (decode_jpeg, resize to 180x180),
`process_path` in a map with `num_parallel_calls=AUTOTUNE`, and its model. The expert form is the
tutorial's own `configure_for_performance`: `cache()` right after the decode, the shuffle after
the cache, batch, prefetch.

Changed to run here: the flower_photos download is replaced by 600 photo-like 500x375 JPEGs in five
class folders (made locally, from a fixed seed; the real photos are about this size); `seed=123` on
the file shuffle (the issue's form: shuffled once, with a seed); the user's form is the tutorial's
pipeline before `configure_for_performance`, with the element shuffle, batch and a `repeat()` (fit
with epochs restarts it each epoch; repeat makes it endless). The model's three convolutions have
8 filters instead of 32, the first with stride 2, and the Dense layer 32 units instead of 128: the
tutorial's model took 1.2 s a step on the 2 shared CPU cores (it is written for a GPU), 8 filters
270 ms, 8 filters with the strided first layer 60 ms (train_on_batch, 32 images, 2026-12-01).

Expected answer and why (plain-TF measurements, benchmarks/real_truth.py, see MEASURED below):
- bottleneck `input`: input alone feeds fewer batches than the free step takes.
- stage `parallel_map(process_path)`: reading, decoding and resizing each JPEG is the cost; the
  list/shuffle/skip stages are file names.
- right: `cache` (the tutorial's fix: decode each file once; 480 images of 180x180x3 float32 are
  ~370 MiB). `prefetch` alone does not remove the decode.
- wrong: `parallel_map` (already parallel), step-side fixes.

MEASURED (2026-12-01, the shared 2-core machine, `flock /tmp/pipediag-cpu.lock python
benchmarks/real_truth.py scenarios/real/tf_load_images.py --seconds 4 --repeats 2`; median (range)
of the 2 runs, per second): free step 26.1 (24.2-28.1) steps; input alone 9.8 (5.2-14.5) batches;
fed 6.2 (5.7-6.7) steps; expert alone 252 (243-262) batches; expert fed 20.1 (17.7-22.5) steps.
Input alone / free step = 0.38: input. The expert's cache makes the fed step 3.2x faster.
Prefixes (ms per batch of 32): file list, shuffle and skip <= 18 ms; with
`parallel_map(process_path)` 210 ms (+196); the later stages add no work per image (the
shuffle(1000) prefix read 420 ms only because a finite prefix refills its buffer at each restart).
"""

import os
import pathlib
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import keras  # noqa: E402
from _common import STEP_FIXES, Expected, data_dir, photo_like  # noqa: E402

EXPECTED = Expected(
    bottleneck="input",
    stage="parallel_map(process_path)",
    right_fixes=("cache",),
    wrong_fixes=("parallel_map",) + STEP_FIXES,
)

CLASSES = ("daisy", "dandelion", "roses", "sunflowers", "tulips")
PER_CLASS = 120
batch_size = 32
img_height = 180
img_width = 180
AUTOTUNE = tf.data.AUTOTUNE


def _make(folder):
    rng = np.random.default_rng(123)
    for name in CLASSES:
        os.makedirs(os.path.join(folder, name))
        for i in range(PER_CLASS):
            image = photo_like(rng, 500)[:375]  # 500 wide, 375 high
            data = tf.io.encode_jpeg(image, quality=90).numpy()
            with open(os.path.join(folder, name, f"{i:04d}.jpg"), "wb") as f:
                f.write(data)


def _data_dir():
    return pathlib.Path(data_dir("real-tf_load_images-v2", _make))


class_names = np.array(CLASSES)


def get_label(file_path):
    # Convert the path to a list of path components
    parts = tf.strings.split(file_path, os.path.sep)
    # The second to last is the class-directory
    one_hot = parts[-2] == class_names
    # Integer encode the label
    return tf.argmax(one_hot)


def decode_img(img):
    # Convert the compressed string to a 3D uint8 tensor
    img = tf.io.decode_jpeg(img, channels=3)
    # Resize the image to the desired size
    return tf.image.resize(img, [img_height, img_width])


def process_path(file_path):
    label = get_label(file_path)
    # Load the raw data from the file as a string
    img = tf.io.read_file(file_path)
    img = decode_img(img)
    return img, label


def _train_files():
    data_dir = _data_dir()
    image_count = len(list(data_dir.glob('*/*.jpg')))
    list_ds = tf.data.Dataset.list_files(str(data_dir/'*/*'), shuffle=False)
    list_ds = list_ds.shuffle(image_count, reshuffle_each_iteration=False, seed=123)
    val_size = int(image_count * 0.2)
    train_ds = list_ds.skip(val_size)
    return train_ds


def make_dataset(batch_size=batch_size):
    train_ds = _train_files().map(process_path, num_parallel_calls=AUTOTUNE)
    return train_ds.shuffle(buffer_size=1000).batch(batch_size).repeat()


def configure_for_performance(ds, batch_size=batch_size):
    ds = ds.cache()
    ds = ds.shuffle(buffer_size=1000)
    ds = ds.batch(batch_size)
    ds = ds.prefetch(buffer_size=AUTOTUNE)
    return ds


def expert_dataset(batch_size=batch_size):
    train_ds = _train_files().map(process_path, num_parallel_calls=AUTOTUNE)
    return configure_for_performance(train_ds, batch_size).repeat()


EXPERT_WARMUP_BATCHES = (len(CLASSES) * PER_CLASS - int(len(CLASSES) * PER_CLASS * 0.2)) // batch_size + 1


def make_model():
    num_classes = 5
    model = keras.Sequential([
        keras.Input((img_height, img_width, 3)),
        keras.layers.Rescaling(1./255),
        keras.layers.Conv2D(8, 3, strides=2, activation='relu'),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(8, 3, activation='relu'),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(8, 3, activation='relu'),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(32, activation='relu'),
        keras.layers.Dense(num_classes)
    ])
    model.compile(
        optimizer='adam',
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=['accuracy'])
    return model
