"""Local data for the TF tutorial "Image classification" (flowers), where and as the script reads it.

The script calls `tf.keras.utils.get_file("flower_photos.tgz", origin=..., extract=True)` (3670
photos of 5 flowers, 218 MiB) and reads `<datasets>/flower_photos_extracted/flower_photos/<class>/
*.jpg`; at the end it classifies one more photo, `get_file('Red_sunflower', origin=...)`. Here: a
temporary KERAS_HOME whose `datasets/flower_photos.tgz` holds `flower_photos/{daisy,dandelion,
roses,sunflowers,tulips}/`, 64 photo-like JPEGs each (320x240 and 240x320, quality 90, fixed
seed), and `datasets/Red_sunflower`, one more JPEG; get_file finds both and downloads nothing.
`ROOT/reference/flower_photos` is the same tree for the builder.

    python make_data.py ROOT        # prints {"env": ..., "cwd": ...} as JSON
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import flower_tree, jpeg, tar_gz  # noqa: E402

CLASSES = ("daisy", "dandelion", "roses", "sunflowers", "tulips")
PER_CLASS = 64


# What the script opens (relative to ROOT): tests/scenarios/test_scripts.py checks they are made.
READS = ("keras_home/datasets/flower_photos.tgz", "keras_home/datasets/Red_sunflower")


def dataset_dir(root):
    """The flower_photos tree as the script reads it (the builder's copy)."""
    return os.path.join(root, "reference", "flower_photos")


def make(root):
    rng = np.random.default_rng(123)
    tree = dataset_dir(root)
    flower_tree(tree, CLASSES, PER_CLASS, rng)
    datasets = os.path.join(root, "keras_home", "datasets")
    tar_gz(tree, os.path.join(datasets, "flower_photos.tgz"), "flower_photos")
    jpeg(rng, os.path.join(datasets, "Red_sunflower"))
    return {"env": {"KERAS_HOME": os.path.join(root, "keras_home")}, "cwd": root}


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    print(json.dumps(make(sys.argv[1])))
