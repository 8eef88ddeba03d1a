"""Local data for the TF tutorial "Custom training with tf.distribute.Strategy", where the script reads it.

The script calls `tf.keras.datasets.fashion_mnist.load_data()`, which takes four gzipped idx files
from `<KERAS_HOME>/datasets/fashion-mnist/` when they are there (no hash is checked) and downloads
them otherwise (60000 + 10000 images of 28x28). Here: a temporary KERAS_HOME with the four files
in the same format and of the same sizes, 60000 training and 10000 test images (28x28 uint8, a
class-dependent blob on noise, fixed seed): the script breaks after its first epoch on Keras 3
(see README.md), so the epoch is kept as long as published. The script writes its checkpoints to
`./training_checkpoints` in ROOT.

    python make_data.py ROOT        # prints {"env": ..., "cwd": ...} as JSON
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import digits, idx_gz  # noqa: E402

TRAIN = 60000
TEST = 10000

VERSION = 2  # of what make() writes (the builder's cached copy is remade when it changes)

# What the script opens (relative to ROOT): tests/scenarios/test_scripts.py checks they are made.
READS = ("keras_home/datasets/fashion-mnist/train-images-idx3-ubyte.gz", "keras_home/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")


def make(root):
    rng = np.random.default_rng(7)
    folder = os.path.join(root, "keras_home", "datasets", "fashion-mnist")
    x_train, y_train = digits(rng, TRAIN)
    x_test, y_test = digits(rng, TEST)
    idx_gz(os.path.join(folder, "train-labels-idx1-ubyte.gz"), y_train)
    idx_gz(os.path.join(folder, "train-images-idx3-ubyte.gz"), x_train)
    idx_gz(os.path.join(folder, "t10k-labels-idx1-ubyte.gz"), y_test)
    idx_gz(os.path.join(folder, "t10k-images-idx3-ubyte.gz"), x_test)
    return {"env": {"KERAS_HOME": os.path.join(root, "keras_home")}, "cwd": root}


def arrays(root):
    """(train_images, train_labels) as fashion_mnist.load_data() reads them back."""
    import gzip

    folder = os.path.join(root, "keras_home", "datasets", "fashion-mnist")
    with gzip.open(os.path.join(folder, "train-labels-idx1-ubyte.gz"), "rb") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    with gzip.open(os.path.join(folder, "train-images-idx3-ubyte.gz"), "rb") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(len(labels), 28, 28)
    return images, labels


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    print(json.dumps(make(sys.argv[1])))
