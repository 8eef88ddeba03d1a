"""Local data for the TF tutorial "Custom training: walkthrough" as published until 2022-02-08
(Iris, `make_csv_dataset`), where and as the script reads it.

The script calls `tf.keras.utils.get_file(fname="iris_training.csv", origin=...)` and, for its
test, `get_file(fname="iris_test.csv", ...)`; with a file of that name already in Keras' cache
(`KERAS_HOME/datasets/`) get_file does not download. Here: a temporary KERAS_HOME with both CSVs in
the published layout (a header line `N,4,setosa,versicolor,virginica`, then four measurements and
the class index per row), 120 and 30 rows, three species apart in their measurements (fixed seed).

    python make_data.py ROOT        # prints {"env": ..., "cwd": ...} as JSON
"""

import json
import os
import sys

import numpy as np

VERSION = 1
# sepal length, sepal width, petal length, petal width (cm): a mean per species, as in Fisher's data
MEANS = np.array([[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.6, 2.0]])
SPREAD = np.array([0.35, 0.35, 0.3, 0.15])

# What the script opens (relative to ROOT): tests/scenarios/test_scripts.py checks they are made.
READS = ("keras_home/datasets/iris_training.csv", "keras_home/datasets/iris_test.csv")


def csv_path(root, name="iris_training.csv"):
    return os.path.join(root, "keras_home", "datasets", name)


def make(root):
    rng = np.random.default_rng(1936)
    os.makedirs(os.path.dirname(csv_path(root)), exist_ok=True)
    for name, rows in (("iris_training.csv", 120), ("iris_test.csv", 30)):
        species = rng.integers(0, 3, size=rows)
        values = np.clip(MEANS[species] + rng.normal(0.0, 1.0, size=(rows, 4)) * SPREAD, 0.1, None)
        with open(csv_path(root, name), "w") as f:
            f.write(f"{rows},4,setosa,versicolor,virginica\n")
            for s, v in zip(species, values):
                f.write(",".join(f"{x:.1f}" for x in v) + f",{s}\n")
    return {"env": {"KERAS_HOME": os.path.join(root, "keras_home")}, "cwd": root}


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    print(json.dumps(make(sys.argv[1])))
