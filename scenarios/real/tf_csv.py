"""The TF tutorial "Load CSV data", its "Multiple files" and "Performance" sections (fonts).

Source: tensorflow/docs site/en/tutorials/load_data/csv.ipynb
(https://www.tensorflow.org/tutorials/load_data/csv). Kept as the tutorial writes them: the fonts
files read by `tf.data.experimental.make_csv_dataset(file_pattern="fonts/*.csv",
batch_size=BATCH_SIZE, num_epochs=1, num_parallel_reads=100)` with `BATCH_SIZE=2048` (the
user's form), and the tutorial's own faster form from its "Performance" section: `list_files`,
`interleave(lambda fname: tf.data.TextLineDataset(fname).skip(1), cycle_length=100)`, then
`.batch(BATCH_SIZE)` and `map(lambda x: tf.io.decode_csv(x, record_defaults=font_column_types))`
("a simple parser ... applied to whole batches"), with `font_column_types = [str(), str()] +
[float()]*(num_font_features-2)`.

Changed to run here: the UCI fonts.zip download is replaced by 20 CSV files of 1000 rows each in
the fonts format (font, fontVariant, m_label, strength, italic, orientation, m_top, m_left,
originalH, originalW, h, w, r0c0 ... r19c19: 412 columns, pixels 1-255), made from a fixed seed;
`label_name='m_label'` in make_csv_dataset so that a model can train on it, and the same label
split in the fast form by a map that makes the same (features dict, label) structure;
`num_epochs=None` / `repeat()` to run endlessly. The tutorial has no model for the fonts: the
step is a small one reading the 400 pixel columns (stacked into an image vector), Dense(64),
Dense(1), regressing m_label.

Expected answer and why (plain-TF measurements, benchmarks/real_truth.py, see MEASURED below):
- bottleneck `input`: parsing 2048 rows of 412 columns per batch, column by column, takes longer
  than the small model's step.
- stage `parallel_interleave(tf_data_experimental_parallel_interleave_filename_to_dataset)`:
  make_csv_dataset's CSV reading (its parallel interleave of one CsvDataset per file, which parses
  every row's 412 fields), the step up that costs most among the prefixes (see MEASURED).
- right: `vectorize_map` (the tutorial's fix: batch the lines, decode the whole batch at once).
- wrong: step-side fixes.

MEASURED (2026-12-01, the shared 2-core machine, `flock /tmp/pipediag-cpu.lock python
benchmarks/real_truth.py scenarios/real/tf_csv.py --seconds 3 --prefix-seconds 2 --repeats 2`;
median (range) of the 2 runs, per second): free step 29.0 (28.0-30.0) steps; input alone 1.0
(0.9-1.0) batches (make_csv_dataset's shuffle(10000) was still filling: fed, measured after it,
1.7 (1.6-1.7) steps is the better estimate of the input); expert alone 15.0 (7.6-22.4) batches;
expert fed 5.9 (3.5-8.2) steps. Input alone / free step = 0.03 (0.06 with the fed rate): input;
the tutorial's batch-then-decode form feeds 9-15x more. Prefixes (ms per batch of 2048): after the
batch, 498 ms of the whole pipeline's 680 ms is the CSV reading and parsing
(`parallel_interleave(...)` over CsvDataset; the shuffle and repeat between it and the batch only
move rows); make_csv_dataset's own `map(map_fn)` (the dict and the label) adds ~200 ms. The
prefixes before the batch are pulled row by row from Python (412 tensors a row) and read far
higher than the real cost.
"""

import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import keras  # noqa: E402
from _common import STEP_FIXES, Expected, data_dir  # noqa: E402

BATCH_SIZE = 2048
FILES, ROWS = 20, 1000
HEADER = (["font", "fontVariant", "m_label", "strength", "italic", "orientation", "m_top", "m_left",
           "originalH", "originalW", "h", "w"] + [f"r{r}c{c}" for r in range(20) for c in range(20)])
PIXELS = [f"r{r}c{c}" for r in range(20) for c in range(20)]

EXPECTED = Expected(
    bottleneck="input",
    stage="parallel_interleave(tf_data_experimental_parallel_interleave_filename_to_dataset)",
    right_fixes=("vectorize_map",),
    wrong_fixes=STEP_FIXES,
)


def _make(folder):
    rng = np.random.default_rng(412)
    fonts = ["AGENCY", "ARIAL", "BAITI", "BANKGOTHIC", "BASKERVILLE", "BAUHAUS", "BELL", "BERLIN", "BERNARD",
             "BITSTREAMVERA", "BODONI", "BOOKMAN", "BRADLEY", "BRITANNIC", "BROADWAY", "BRUSH", "CALIBRI",
             "CALIFORNIAN", "CALISTO", "CAMBRIA"]
    for i, font in enumerate(fonts[:FILES]):
        numbers = np.column_stack([
            rng.integers(33, 1000, ROWS),  # m_label
            rng.choice([0.4, 0.6], ROWS), rng.integers(0, 2, ROWS), np.zeros(ROWS, int),
            rng.integers(0, 80, (ROWS, 4)), np.full((ROWS, 2), 20),
            rng.integers(1, 256, (ROWS, 400)),
        ])
        with open(os.path.join(folder, f"{font}.csv"), "w") as f:
            f.write(",".join(HEADER) + "\n")
            for row in numbers:
                f.write(f"{font},scanned," + ",".join(f"{v:g}" for v in row) + "\n")


def _pattern():
    return os.path.join(data_dir("real-tf_csv-v1", _make), "*.csv")


def make_dataset(batch_size=BATCH_SIZE):
    fonts_ds = tf.data.experimental.make_csv_dataset(
        file_pattern=_pattern(),
        batch_size=batch_size, num_epochs=None,
        num_parallel_reads=100,
        label_name='m_label')
    return fonts_ds


num_font_features = len(HEADER)
font_column_types = ["", ""] + [0.0]*(num_font_features-2)


def _as_features(*columns):
    features = dict(zip(HEADER, columns))
    label = features.pop('m_label')
    return features, label


def expert_dataset(batch_size=BATCH_SIZE):
    fonts_files = tf.data.Dataset.list_files(_pattern())
    fonts_lines = fonts_files.interleave(
        lambda fname: tf.data.TextLineDataset(fname).skip(1),
        cycle_length=100).batch(batch_size)
    fonts_fast = fonts_lines.map(lambda x: tf.io.decode_csv(x, record_defaults=font_column_types))
    return fonts_fast.map(_as_features).repeat()


class PixelsModel(keras.Model):
    """Reads the 400 pixel columns of a fonts batch as one vector per row."""

    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(64, activation="relu")
        self.out = keras.layers.Dense(1)

    def call(self, features):
        pixels = keras.ops.stack([keras.ops.cast(features[name], "float32") for name in PIXELS], axis=1) / 255.0
        return self.out(self.hidden(pixels))


def make_model():
    model = PixelsModel()
    model.compile(optimizer="adam", loss="mse")
    return model
