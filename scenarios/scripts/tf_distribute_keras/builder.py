"""The TF tutorial "Distributed training with Keras" refactored for `pipediag diagnose`.

The tutorial's training pipeline and model, unchanged, moved into functions: tfds' `mnist` train
split `as_supervised`, `map(scale)` (cast to float32, / 255), `cache()`, `shuffle(10000)`,
`batch(64 * num_replicas_in_sync)`; the Conv2D(32) + Dense(64) model built and compiled under a
MirroredStrategy's scope (Adam(0.001), sparse categorical cross-entropy from logits). On this
CPU-only machine the strategy has one replica (the script sets no devices). The tutorial's
callbacks (TensorBoard, ModelCheckpoint, LearningRateScheduler, PrintLR) are left out: diagnose
steps with `train_on_batch`. `.repeat()` stands for the 12 epochs. Data: the case's make_data.py
output, passed as `data_dir=` (the script reads it from TFDS_DATA_DIR).

Expected answer and why: `compute`, no stage, no fix required, every input-side fix wrong. After
the first epoch the pipeline replays scaled images from its cache and shuffles them: alone it
gives ~80x the batches the step (Conv2D(32) then a 5408 x 64 Dense, Adam, ~24 ms on 2 CPU cores)
takes.

MEASURED (plain TensorFlow, 2026-12-02 11:54 UTC, the shared 2-core machine holding /tmp/cpu.lock,
`python benchmarks/real_truth.py scenarios/scripts/tf_distribute_keras/builder.py --seconds 4
--prefix-seconds 1 --repeats 2`; median (range), per second): free step 41.7 (39.1-44.3) steps;
input alone 3403 (3396-3411) batches; fed 42.9 (41.4-44.3) steps. Input alone / free = 82. (On
the maker's first version, 9600 training images; it now writes 30000, which changes the epoch's
length, not the cost of a batch from the cache.)
"""

import os
import sys

import tensorflow as tf
import tensorflow_datasets as tfds

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import INPUT_FIXES, Expected, case_root, load_maker  # noqa: E402

CASE = "tf_distribute_keras"
EXPECTED = Expected(bottleneck="compute", stage=None, right_fixes=(), wrong_fixes=INPUT_FIXES)

BUFFER_SIZE = 10000
BATCH_SIZE_PER_REPLICA = 64
_strategy = None


def _get_strategy():
    global _strategy
    if _strategy is None:
        _strategy = tf.distribute.MirroredStrategy()
    return _strategy


def scale(image, label):
    image = tf.cast(image, tf.float32)
    image /= 255
    return image, label


def make_dataset():
    strategy = _get_strategy()
    datasets, info = tfds.load(name='mnist', with_info=True, as_supervised=True,
                               data_dir=load_maker(CASE).tfds_dir(case_root(CASE)))
    mnist_train = datasets['train']
    BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync
    train_dataset = mnist_train.map(scale).cache().shuffle(BUFFER_SIZE).batch(BATCH_SIZE)
    return train_dataset.repeat()


def make_model():
    strategy = _get_strategy()
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.layers.Conv2D(32, 3, activation='relu', input_shape=(28, 28, 1)),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(64, activation='relu'),
            tf.keras.layers.Dense(10)
        ])
        model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      optimizer=tf.keras.optimizers.Adam(learning_rate=0.001),
                      metrics=['accuracy'])
    return model
