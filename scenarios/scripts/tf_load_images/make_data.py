"""Local data for the TF tutorial "Load and preprocess images", where and as the script reads it.

The script calls `tf.keras.utils.get_file(origin=<flower_photos.tgz>, extract=True)` (3670 photos
of 5 flowers): with no file name, Keras 3 keeps the download as `datasets/flower_photos.tgz_archive`
and extracts it into `datasets/flower_photos.tgz/`, whose `flower_photos/<class>/*.jpg` the script
reads twice (`image_dataset_from_directory`, then its own `list_files` + `map(process_path)`
pipeline); at the end it loads `tfds.load('tf_flowers')`. Here: a temporary KERAS_HOME with
`datasets/flower_photos.tgz_archive` holding 5 x 200 photo-like JPEGs (fixed seed), and a
TFDS_DATA_DIR where tfds' own tf_flowers builder prepared the same archive (instead of its
download). `ROOT/reference/flower_photos` is the tree for the builder. Making it imports
tensorflow_datasets (seconds).

    python make_data.py ROOT        # prints {"env": ..., "cwd": ...} as JSON
"""

import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import flower_tree, tar_gz  # noqa: E402

CLASSES = ("daisy", "dandelion", "roses", "sunflowers", "tulips")
PER_CLASS = 200


# What the script opens (relative to ROOT): tests/scenarios/test_scripts.py checks they are made.
READS = ("keras_home/datasets/flower_photos.tgz_archive", "tensorflow_datasets/tf_flowers/3.0.1/dataset_info.json")


def dataset_dir(root):
    """The flower_photos tree as the script reads it (the builder's copy)."""
    return os.path.join(root, "reference", "flower_photos")


def _prepare_tf_flowers(archive, data_dir):
    import tensorflow_datasets as tfds

    builder = tfds.builder("tf_flowers", data_dir=data_dir)

    def split_generators(dl_manager):  # the builder's own, with the local archive for the download
        return [tfds.core.SplitGenerator(name="train", gen_kwargs={"images_dir_path": dl_manager.iter_archive(archive)})]

    builder._split_generators = split_generators
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(try_download_gcs=False))


def make(root):
    rng = np.random.default_rng(321)
    tree = dataset_dir(root)
    flower_tree(tree, CLASSES, PER_CLASS, rng)
    archive = os.path.join(root, "downloads", "flower_photos.tgz")  # tfds tells archives by their extension
    tar_gz(tree, archive, "flower_photos")
    os.makedirs(os.path.join(root, "keras_home", "datasets"))
    shutil.copy(archive, os.path.join(root, "keras_home", "datasets", "flower_photos.tgz_archive"))
    _prepare_tf_flowers(archive, os.path.join(root, "tensorflow_datasets"))
    return {"env": {"KERAS_HOME": os.path.join(root, "keras_home"),
                    "TFDS_DATA_DIR": os.path.join(root, "tensorflow_datasets")}, "cwd": root}


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    print(json.dumps(make(sys.argv[1])))
