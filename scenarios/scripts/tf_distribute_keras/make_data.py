"""Local data for the TF tutorial "Distributed training with Keras", where the script reads it.

The script calls `tfds.load(name='mnist', with_info=True, as_supervised=True)`, which reads a
prepared dataset from `$TFDS_DATA_DIR/mnist/3.0.1/` when it is there and downloads and prepares
one otherwise. Here: a temporary TFDS_DATA_DIR prepared by tfds' own MNIST builder (the same
features, PNG-encoded 28x28x1 images, int labels, TFRecord shards and dataset_info.json) from
local files in MNIST's idx format instead of the download: 30000 training and 5000 test images
(a class-dependent blob on noise, fixed seed; half of MNIST's 60000 + 10000, so that the first
epoch, 469 steps, is long enough to diagnose: here the script stops at its end, see README.md).
The script writes checkpoints, TensorBoard logs and `my_model.keras` in ROOT. Making it imports
tensorflow_datasets and takes ~30 s on 2 cores.

    python make_data.py ROOT        # prints {"env": ..., "cwd": ...} as JSON
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import digits, idx_gz  # noqa: E402

TRAIN = 30000
TEST = 5000

VERSION = 2  # of what make() writes (the builder's cached copy is remade when it changes)

# What the script opens (relative to ROOT): tests/scenarios/test_scripts.py checks they are made.
READS = ("tensorflow_datasets/mnist/3.0.1/dataset_info.json", "tensorflow_datasets/mnist/3.0.1/mnist-train.tfrecord-00000-of-00001")


def tfds_dir(root):
    return os.path.join(root, "tensorflow_datasets")


def make(root):
    import tensorflow_datasets as tfds

    rng = np.random.default_rng(11)
    raw = os.path.join(root, "mnist-idx")
    files = {}
    for split, count in (("train", TRAIN), ("test", TEST)):
        images, labels = digits(rng, count)
        files[split] = (os.path.join(raw, f"{split}-images-idx3-ubyte"), os.path.join(raw, f"{split}-labels-idx1-ubyte"))
        idx_gz(files[split][0], images, compress=False)  # as the builder reads them once extracted
        idx_gz(files[split][1], labels, compress=False)
    builder = tfds.builder("mnist", data_dir=tfds_dir(root))

    def split_generators(dl_manager):  # the builder's own, with local files for the download
        return [
            tfds.core.SplitGenerator(name=split, gen_kwargs=dict(
                num_examples=count, data_path=files[split][0], label_path=files[split][1]))
            for split, count in (("train", TRAIN), ("test", TEST))
        ]

    builder._split_generators = split_generators
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(try_download_gcs=False))
    return {"env": {"TFDS_DATA_DIR": tfds_dir(root)}, "cwd": root}


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    print(json.dumps(make(sys.argv[1])))
