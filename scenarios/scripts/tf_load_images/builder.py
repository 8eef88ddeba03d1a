"""The TF tutorial "Load and preprocess images" refactored for `pipediag diagnose`.

The tutorial's first training pipeline and model, unchanged, moved into functions:
`image_dataset_from_directory(data_dir, validation_split=0.2, subset="training", seed=123,
image_size=(180, 180), batch_size=32)`, `cache().prefetch(buffer_size=AUTOTUNE)`; the three
Conv2D(32) Sequential model with Rescaling, Adam, sparse categorical cross-entropy from logits.
(The tutorial then fits the same model again on its own `list_files` + `map(process_path)`
pipeline and loads tfds' tf_flowers; `pipediag run` diagnoses the first `fit`.) `.repeat()`
stands for the 3 epochs. Data: the case's make_data.py output.

Expected answer and why: `compute`, no stage, no fix required, every input-side fix wrong. After
the first epoch the pipeline replays decoded, resized batches from its cache: alone it gives
~2000x the batches the network (three unpadded Conv2D(32) at 180x180, ~800 ms a step on 2 CPU
cores) takes.

MEASURED (plain TensorFlow, 2026-12-02 ~11:58 UTC, the shared 2-core machine holding
/tmp/cpu.lock, `python benchmarks/real_truth.py scenarios/scripts/tf_load_images/builder.py
--seconds 4 --prefix-seconds 1 --repeats 2`; median (range), per second): free step 1.3 (1.2-1.4)
steps; input alone 2831 (2810-2852) batches; fed 1.2 (1.2-1.2) steps. Input alone / free = 2157.
"""

import os
import sys

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import INPUT_FIXES, Expected, case_root, load_maker  # noqa: E402

CASE = "tf_load_images"
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
    train_ds = train_ds.cache().prefetch(buffer_size=AUTOTUNE)
    return train_ds.repeat()


def make_model():
    model = tf.keras.Sequential([
        tf.keras.layers.Rescaling(1./255),
        tf.keras.layers.Conv2D(32, 3, activation='relu'),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(32, 3, activation='relu'),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(32, 3, activation='relu'),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation='relu'),
        tf.keras.layers.Dense(num_classes)
    ])
    model.compile(
        optimizer='adam',
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=['accuracy'])
    return model
