"""What the script cases share: their data makers' small writers, and the data folder a builder reads.

A case's make_data.py writes, under a root folder, the files its published script would download,
where the script looks for them (a Keras download cache under `KERAS_HOME`, an archive in the
working directory, a tfds data folder), and returns how to run the script there:
`{"env": {...}, "cwd": root}`. Everything is made from fixed seeds with NumPy and Pillow (no
TensorFlow), in seconds.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import sys
import tarfile
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from _common import INPUT_FIXES, STEP_FIXES, Expected, data_dir, photo_like  # noqa: E402,F401  (scenarios/_common.py; re-exported for the builders)

WORDS = ("the movie film was is a an and of to in this that it with for as but very good bad great "
         "terrible acting plot story characters director scene scenes really just one most best worst "
         "boring funny love hate script ending time watch seen ever made people would could should "
         "beautiful awful performance cast music camera long short character actor actress").split()


def load_maker(case: str) -> Any:
    """scenarios/scripts/<case>/make_data.py as a module (by path: every case's file has that name)."""
    name = f"_make_data_{case}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, case, "make_data.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def case_root(case: str) -> str:
    """The data a case's builder reads: its make_data run once into a cached folder (named with
    make_data.VERSION, raised when what it makes changes)."""
    maker = load_maker(case)
    return data_dir(f"scripts-{case}-v{getattr(maker, 'VERSION', 1)}", maker.make)


def vocabulary(size: int, seed: int) -> np.ndarray:
    """WORDS and made-up lowercase words, `size` in all: a script that prints its vocabulary's
    1288th entry (the TF text tutorial) needs more than WORDS' 70."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    made = {"".join(rng.choice(letters, size=int(rng.integers(3, 10)))) for _ in range(2 * size)}
    return np.array(WORDS + sorted(made - set(WORDS))[: size - len(WORDS)])


def review(rng: np.random.Generator, words_from: np.ndarray | None = None) -> str:
    """An IMDB-like review: ~230 words in sentences, a `<br /><br />` break, a score at the end.
    Words from WORDS, or from `words_from` with Zipf-like frequencies (a few common, many rare)."""
    size = int(rng.integers(120, 340))
    if words_from is None:
        words = rng.choice(WORDS, size=size)
    else:
        words = words_from[np.minimum(rng.zipf(1.3, size=size) - 1, len(words_from) - 1)]
    sentences = []
    for chunk in np.array_split(words, max(1, len(words) // 12)):
        sentence = " ".join(chunk)
        sentences.append(sentence[0].upper() + sentence[1:] + str(rng.choice([".", "!", "?", "..."])))
    text = " ".join(sentences)
    cut = len(text) // 2
    return text[:cut] + "<br /><br />" + text[cut:] + f" {int(rng.integers(1, 11))}/10"


def imdb_tree(folder: str, train_per_class: int, test_per_class: int, unsup: int, seed: int,
              named: tuple[str, ...] = (), words_from: np.ndarray | None = None) -> None:
    """aclImdb's layout: train/{pos,neg,unsup}, test/{pos,neg}, one review per `<id>_<score>.txt`.
    `named` are train/... paths the script opens by name (e.g. `pos/1181_9.txt`)."""
    rng = np.random.default_rng(seed)
    counts = {"train/pos": train_per_class, "train/neg": train_per_class, "train/unsup": unsup,
              "test/pos": test_per_class, "test/neg": test_per_class}
    for sub, count in counts.items():
        os.makedirs(os.path.join(folder, sub))
        for i in range(count):
            with open(os.path.join(folder, sub, f"{i}_{int(rng.integers(1, 11))}.txt"), "w") as f:
                f.write(review(rng, words_from))
    for path in named:
        with open(os.path.join(folder, "train", path), "w") as f:
            f.write(review(rng, words_from))


def tar_gz(source_dir: str, archive: str, arcname: str) -> None:
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source_dir, arcname=arcname)


def idx_gz(path: str, array: np.ndarray, compress: bool = True) -> None:
    """An MNIST-format file (idx, gzipped as published, or not as tfds reads it after extraction):
    the 16-byte (images) or 8-byte (labels) header, then the bytes."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    dims = array.shape
    head = (0x0803 if len(dims) == 3 else 0x0801).to_bytes(4, "big")
    head += b"".join(int(d).to_bytes(4, "big") for d in dims)
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(head + array.astype(np.uint8).tobytes())


def digits(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """28x28 uint8 images with a class-dependent blob (learnable), and their labels 0-9."""
    labels = rng.integers(0, 10, size=count).astype(np.uint8)
    y, x = np.mgrid[0:28, 0:28]
    images = rng.integers(0, 40, size=(count, 28, 28)).astype(np.float32)
    for k in range(10):
        cy, cx = 6 + 2 * (k // 5) * 4, 4 + 4 * (k % 5)
        blob = 200 * np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / 18.0)
        images[labels == k] += blob
    return np.clip(images, 0, 255).astype(np.uint8), labels


def flower_tree(folder: str, classes: tuple[str, ...], per_class: int, rng: np.random.Generator) -> None:
    """flower_photos' layout: one folder per class of photo-like JPEGs (320x240 or 240x320, quality 90)."""
    for name in classes:
        os.makedirs(os.path.join(folder, name))
        for i in range(per_class):
            jpeg(rng, os.path.join(folder, name, f"{i}.jpg"))


def jpeg(rng: np.random.Generator, path: str) -> None:
    """One photo-like JPEG, landscape (70%) or portrait."""
    from PIL import Image

    image = photo_like(rng, 320)
    image = image[:240] if rng.random() < 0.7 else image[:, :240]
    Image.fromarray(image).save(path, format="JPEG", quality=90)
