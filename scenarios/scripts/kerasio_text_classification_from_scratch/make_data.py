"""Local data for keras-io's text_classification_from_scratch.py, where and as the script reads it.

The script calls `keras.utils.get_file("aclImdb_v1.tar.gz", url, extract=True)` (the Stanford IMDB
archive, 25000 + 25000 reviews) and then reads `os.path.join(os.path.dirname(dataset_zip),
"aclImdb")`. Here: a temporary KERAS_HOME whose `datasets/aclImdb_v1.tar.gz` holds an aclImdb tree
of 1250 + 1250 training reviews (+ 40 in train/unsup, which the script skips by naming its
classes), 250 + 250 test reviews, so get_file finds it and downloads nothing. Keras 3.15 extracts
the archive into `datasets/aclImdb_v1_extracted/` and returns that path, so the folder the script
reads, `datasets/aclImdb`, is written beside it as well (with the published archive the script
fails there on Keras 3.15; older get_file extracted into `datasets/`).

    python make_data.py ROOT        # prints {"env": ..., "cwd": ...} as JSON
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import imdb_tree, tar_gz  # noqa: E402

TRAIN_PER_CLASS = 1250
TEST_PER_CLASS = 250


# What the script opens (relative to ROOT): tests/scenarios/test_scripts.py checks they are made.
READS = ("keras_home/datasets/aclImdb_v1.tar.gz", "keras_home/datasets/aclImdb/train/pos", "keras_home/datasets/aclImdb/test/neg")


def dataset_dir(root):
    """The folder the script reads its reviews from."""
    return os.path.join(root, "keras_home", "datasets", "aclImdb")


def make(root):
    tree = dataset_dir(root)
    imdb_tree(tree, TRAIN_PER_CLASS, TEST_PER_CLASS, unsup=40, seed=1337)
    tar_gz(tree, os.path.join(root, "keras_home", "datasets", "aclImdb_v1.tar.gz"), "aclImdb")
    return {"env": {"KERAS_HOME": os.path.join(root, "keras_home")}, "cwd": root}


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    print(json.dumps(make(sys.argv[1])))
