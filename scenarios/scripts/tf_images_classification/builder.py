"""The TF tutorial "Image classification" (flowers) refactored for `pipediag diagnose`.

The tutorial's training pipeline and its first model, unchanged, moved into functions:
`image_dataset_from_directory(data_dir, validation_split=0.2, subset="training", seed=123,
image_size=(180, 180), batch_size=32)`, then `cache().shuffle(1000).prefetch(buffer_size=AUTOTUNE)`;
the three-Conv2D Sequential model with Rescaling, Adam, sparse categorical cross-entropy from
logits. (The tutorial fits a second, augmented model afterwards; `pipediag run` diagnoses the
first `fit` before the script gets there.) `.repeat()` stands for the 10 epochs. Data: the case's
make_data.py output. scenarios/real/kerasio_cached_heavy_step.py adapts the same tutorial's second
model with its own sizes.

Expected answer and why: `compute`, no stage, no fix required, every input-side fix wrong. After
the first epoch the pipeline replays decoded, resized images from its cache: alone it gives
~2300x the batches the network (three padded Conv2D at 180x180 and a 30976 x 128 Dense, ~670 ms a
step on 2 CPU cores) takes.

MEASURED (plain TensorFlow, 2026-12-02 12:16 UTC, the shared 2-core machine holding /tmp/cpu.lock,
`python benchmarks/real_truth.py scenarios/scripts/tf_images_classification/builder.py --seconds 4
--prefix-seconds 1 --repeats 2`; median (range), per second): free step 1.5 (1.3-1.6) steps;
input alone 3399 (3091-3707) batches; fed 1.5 (1.5-1.6) steps. Input alone / free = 2335.
"""

import os
import sys

import tensorflow as tf
from tensorflow.keras import layers
from tensorflow.keras.models import Sequential

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import INPUT_FIXES, Expected, case_root, load_maker  # noqa: E402

CASE = "tf_images_classification"
EXPECTED = Expected(bottleneck="compute", stage=None, right_fixes=(), wrong_fixes=INPUT_FIXES)

batch_size = 32
img_height = 180
img_width = 180
num_classes = 5
AUTOTUNE = tf.data.AUTOTUNE


def make_dataset():
    data_dir = load_maker(CASE).dataset_dir(case_root(CASE))
    train_ds = tf.keras.utils.image_dataset_from_directory(
        data_dir,
        validation_split=0.2,
        subset="training",
        seed=123,
        image_size=(img_height, img_width),
        batch_size=batch_size,
        verbose=False)
    train_ds = train_ds.cache().shuffle(1000).prefetch(buffer_size=AUTOTUNE)
    return train_ds.repeat()


def make_model():
    model = Sequential([
        layers.Rescaling(1./255, input_shape=(img_height, img_width, 3)),
        layers.Conv2D(16, 3, padding='same', activation='relu'),
        layers.MaxPooling2D(),
        layers.Conv2D(32, 3, padding='same', activation='relu'),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, padding='same', activation='relu'),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(128, activation='relu'),
        layers.Dense(num_classes)
    ])
    model.compile(optimizer='adam',
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=['accuracy'])
    return model
