"""Local data for the TF tutorial "Custom training: walkthrough", where and as the script reads it.

The script (the current version, Palmer penguins) calls `tfds.load('penguins/simple')` for a
preview and `tfds.load("penguins/processed", split=['train[:20%]', 'train[20%:]'],
as_supervised=True)` for training; tfds' penguins builder downloads `penguins_size.csv` and
`penguins_processed.csv` from storage.googleapis.com. Here: a TFDS_DATA_DIR where that builder
prepared both configs from local CSVs of the same columns and sizes (344 and 334 rows, fixed
seed; three species apart in their measurements, the processed features scaled to [0, 1] as in
the published file). Making it imports tensorflow_datasets (seconds). The script's previews call
`tfds.as_dataframe`, which needs pandas: not a pipediag dependency, so running the script needs
`pip install pandas`.

    python make_data.py ROOT        # prints {"env": ..., "cwd": ...} as JSON
"""

import csv
import json
import os
import sys

import numpy as np

VERSION = 1
SPECIES = ("Adelie", "Chinstrap", "Gentoo")
ISLANDS = ("Biscoe", "Dream", "Torgersen")
# culmen length, culmen depth, flipper length (mm), body mass (g): a mean per species, as in the study
MEANS = np.array([[38.8, 18.3, 190.0, 3700.0], [48.8, 18.4, 196.0, 3733.0], [47.5, 15.0, 217.0, 5076.0]])
SPREAD = np.array([2.7, 1.2, 6.5, 460.0])
SIMPLE_ROWS, PROCESSED_ROWS = 344, 334

# What the script opens (relative to ROOT): tests/scenarios/test_scripts.py checks they are made.
READS = ("tensorflow_datasets/penguins/simple/1.0.0/dataset_info.json",
         "tensorflow_datasets/penguins/processed/1.0.0/dataset_info.json")


def _measurements(rng, n):
    species = np.sort(rng.integers(0, 3, size=n))  # the published files list the species in turn
    values = MEANS[species] + rng.normal(0.0, 1.0, size=(n, 4)) * SPREAD
    return species, values


def write_csvs(folder):
    """penguins_size.csv and penguins_processed.csv, with the published files' columns."""
    rng = np.random.default_rng(2020)
    os.makedirs(folder, exist_ok=True)
    species, values = _measurements(rng, SIMPLE_ROWS)
    with open(os.path.join(folder, "penguins_size.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["species", "island", "culmen_length_mm", "culmen_depth_mm", "flipper_length_mm", "body_mass_g",
                    "sex"])
        for s, v in zip(species, values):
            w.writerow([SPECIES[s], ISLANDS[rng.integers(0, 3)], *(f"{x:.1f}" for x in v),
                        ("MALE", "FEMALE")[rng.integers(0, 2)]])
    species, values = _measurements(rng, PROCESSED_ROWS)
    lo, hi = values.min(axis=0), values.max(axis=0)
    scaled = (values - lo) / (hi - lo)
    with open(os.path.join(folder, "penguins_processed.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["species", "culmen_length_mm", "culmen_depth_mm", "flipper_length_mm", "body_mass_g"])
        for s, v in zip(species, scaled):
            w.writerow([int(s), *(f"{x:.6f}" for x in v)])


def _prepare(config, csv_path, data_dir):
    import tensorflow_datasets as tfds

    builder = tfds.builder(f"penguins/{config}", data_dir=data_dir)

    def split_generators(dl_manager):  # the builder's own, with the local file for the download
        return {"train": builder._generate_examples(tfds.core.Path(csv_path))}

    builder._split_generators = split_generators
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(try_download_gcs=False))


def make(root):
    downloads = os.path.join(root, "downloads")
    write_csvs(downloads)
    data_dir = os.path.join(root, "tensorflow_datasets")
    _prepare("simple", os.path.join(downloads, "penguins_size.csv"), data_dir)
    _prepare("processed", os.path.join(downloads, "penguins_processed.csv"), data_dir)
    return {"env": {"TFDS_DATA_DIR": data_dir}, "cwd": root}


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    print(json.dumps(make(sys.argv[1])))
