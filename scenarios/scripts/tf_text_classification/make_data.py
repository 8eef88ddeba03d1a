"""Local data for the TF tutorial "Basic text classification", where and as the script reads it.

The script calls `tf.keras.utils.get_file("aclImdb_v1", url, untar=True, cache_dir='.',
cache_subdir='')`: with a name without a dot, Keras 3 keeps the download as `./aclImdb_v1_archive`
and extracts it into `./aclImdb_v1/`, which the script reads (`aclImdb_v1/aclImdb/train`, `test`);
it prints `train/pos/1181_9.txt` and deletes `train/unsup`. Here: `ROOT/aclImdb_v1_archive`, a
tar.gz of an aclImdb tree of 5000 + 5000 training reviews (+ 40 unsup, + the named one in pos/),
500 + 500 test reviews, their words drawn from a 6000-word vocabulary (the script prints the
adapted vocabulary's entries 313 and 1287); the script runs in ROOT. A copy of the tree, `ROOT/reference/aclImdb`, is
what the builder reads, without `unsup` (as the script leaves its own).

    python make_data.py ROOT        # prints {"env": ..., "cwd": ...} as JSON
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _data import imdb_tree, tar_gz, vocabulary  # noqa: E402

TRAIN_PER_CLASS = 5000
TEST_PER_CLASS = 500

VERSION = 3  # of what make() writes (the builder's cached copy is remade when it changes)

# What the script opens (relative to ROOT): tests/scenarios/test_scripts.py checks they are made.
READS = ("aclImdb_v1_archive",)


def dataset_dir(root):
    """The aclImdb tree as the script sees it after extraction (the builder's copy)."""
    return os.path.join(root, "reference", "aclImdb")


def make(root):
    tree = dataset_dir(root)
    imdb_tree(tree, TRAIN_PER_CLASS, TEST_PER_CLASS, unsup=40, seed=42, named=("pos/1181_9.txt",),
              words_from=vocabulary(6000, seed=42))
    tar_gz(tree, os.path.join(root, "aclImdb_v1_archive"), "aclImdb")
    shutil.rmtree(os.path.join(tree, "train", "unsup"))  # as the script does to its own copy
    return {"env": {}, "cwd": root}


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    print(json.dumps(make(sys.argv[1])))
