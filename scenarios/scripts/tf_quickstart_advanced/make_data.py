"""Local data for the TF tutorial "TensorFlow 2 quickstart for experts", and the script's one edit.

The script calls `tf.keras.datasets.mnist.load_data()`, which checks the sha256 of
`<KERAS_HOME>/datasets/mnist.npz` against the published MNIST file and downloads it again on a
mismatch: no local file of other content can stand in for it. So this is the one case with an
edit (source.json, applied by get_scripts.py and marked `# pipediag: local data`): the load line
reads `mnist.npz` from the working directory with NumPy, the keys Keras' loader reads (`x_train`,
`y_train`, `x_test`, `y_test`). Here: ROOT/mnist.npz of 9600 training and 1600 test images
(28x28 uint8, a class-dependent blob on noise, fixed seed); the script runs in ROOT.

    python make_data.py ROOT        # prints {"env": ..., "cwd": ...} as JSON
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import digits  # noqa: E402

TRAIN = 9600
TEST = 1600


# What the script opens (relative to ROOT): tests/scenarios/test_scripts.py checks they are made.
READS = ("mnist.npz",)


def npz_path(root):
    return os.path.join(root, "mnist.npz")


def make(root):
    rng = np.random.default_rng(3)
    x_train, y_train = digits(rng, TRAIN)
    x_test, y_test = digits(rng, TEST)
    np.savez(npz_path(root), x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    return {"env": {}, "cwd": root}


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    print(json.dumps(make(sys.argv[1])))
