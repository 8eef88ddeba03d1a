"""Decode in one stage, crop in a later one: pipediag's rewrite against the original, as ratios.

    flock /tmp/pipediag-cpu.lock python benchmarks/decode_crop_across.py [--rounds 7] [--batches 12]

Two pipelines over 384x384 photo-like JPEGs cropped at random to 64x64 (issue 13 item 2), data
made in a temporary folder:
- `user maps`: from_tensor_slices(jpegs).map(decode).map(crop).batch(32), both maps the user's;
- `tfds`: a tensorflow-datasets builder of our own (no autocache, as for a dataset too large for
  it), `builder.as_dataset(...).map(crop).batch(32)`: tfds' parse_and_decode decodes.
Each is measured as the original, with pipediag's decode_crop change alone (the ablation's
"alone" build), with it and the parallel_map change (the crop map draws random numbers, so
TensorFlow leaves it serial: the decode then runs in a serial stage unless made parallel), and,
for tfds, the expert form (decoders={'image': SkipDecoding()} and decode_and_crop_jpeg in the map).
Input only (no step), in interleaved rounds: each round times every variant once for `--batches`
batches after one warm-up batch; the ratio to the original is taken per round and reported as its
median and range over the rounds. Wall time is shared with other processes: hold the CPU lock.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios"))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_datasets as tfds  # noqa: E402
from _common import photo_like  # noqa: E402

from pipediag.tuner.rewrite import build, plan_tuning  # noqa: E402
from pipediag.tuner.rules import TuningFacts  # noqa: E402

IMAGES, SIZE, CROP, BATCH = 256, 384, 64, 32
# No RAM for a cache, as for a dataset too large to cache (ImageNet-sized): a cache of the decoded
# images, where it fits, is planned instead of moving the decode (docs/verdict.md).
FACTS = TuningFacts(cores=os.cpu_count() or 1, ram_budget_bytes=1024, fill_budget_seconds=10, latency_bound=False)


class Photos(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    name = "pipediag_bench_photos"
    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict({
            "image": tfds.features.Image(shape=(SIZE, SIZE, 3), encoding_format="jpeg"),
            "label": tfds.features.ClassLabel(num_classes=10)}))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        rng = np.random.default_rng(13)
        for i in range(IMAGES):
            yield i, {"image": photo_like(rng, SIZE), "label": i % 10}


def decode(jpeg):
    return tf.io.decode_jpeg(jpeg, channels=3)


def crop(image):
    return tf.image.random_crop(image, [CROP, CROP, 3])


def tfds_crop(x):
    return tf.image.random_crop(x["image"], [CROP, CROP, 3]), x["label"]


def expert_crop(x):
    shape = tf.image.extract_jpeg_shape(x["image"])
    top = tf.random.uniform([], 0, shape[0] - CROP + 1, dtype=tf.int32)
    left = tf.random.uniform([], 0, shape[1] - CROP + 1, dtype=tf.int32)
    return tf.image.decode_and_crop_jpeg(x["image"], tf.stack([top, left, CROP, CROP]), channels=3), x["label"]


def variants(original, expert=None):
    plan = plan_tuning(original, FACTS, input_batches_per_sec=None)
    keys = {c.kind: c.key for c in plan.changes if c.applied}
    change = next(c for c in plan.changes if c.kind == "decode_crop")
    if not change.applied:
        raise SystemExit(f"decode_crop was not planned: {change.reason}")
    out = {"original": original, "decode_crop alone": build(plan, [keys["decode_crop"]]).dataset}
    if "parallel_map" in keys:
        out["parallel_map alone"] = build(plan, [keys["parallel_map"]]).dataset
        out["decode_crop + parallel_map"] = build(plan, [keys["decode_crop"], keys["parallel_map"]]).dataset
    if expert is not None:
        out["expert (tfds decoders=)"] = expert
    return out


def rate(ds, batches: int) -> float:
    iterator = iter(ds.repeat())
    next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    return batches / (time.perf_counter() - start)


def measure(name: str, pipelines: dict, rounds: int, batches: int) -> None:
    ratios = {k: [] for k in pipelines if k != "original"}
    rates = {k: [] for k in pipelines}
    for _ in range(rounds):
        now = {k: rate(ds, batches) for k, ds in pipelines.items()}
        for k, r in now.items():
            rates[k].append(r)
        for k in ratios:
            ratios[k].append(now[k] / now["original"])
    print(f"\n{name}: {rounds} rounds x {batches} batches of {BATCH} ({SIZE}px JPEGs -> {CROP}px crops)")
    print(f"  original: median {statistics.median(rates['original']):.1f} batches/s")
    for k, values in ratios.items():
        print(f"  {k}: median {statistics.median(values):.2f}x the original (range {min(values):.2f}-{max(values):.2f}; "
              f"{statistics.median(rates[k]):.1f} batches/s)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batches", type=int, default=12)
    args = parser.parse_args()
    tfds.disable_progress_bar()
    rng = np.random.default_rng(12)
    jpegs = [tf.io.encode_jpeg(photo_like(rng, SIZE), quality=90).numpy() for _ in range(IMAGES)]
    user = tf.data.Dataset.from_tensor_slices(jpegs).map(decode).map(crop).batch(BATCH)
    measure("user maps: map(decode) then map(crop)", variants(user), args.rounds, args.batches)
    with tempfile.TemporaryDirectory() as folder:
        builder = Photos(data_dir=folder)
        builder.download_and_prepare()
        config = tfds.ReadConfig(try_autocache=False)
        original = builder.as_dataset(split="train", read_config=config).map(tfds_crop).batch(BATCH)
        expert = builder.as_dataset(split="train", read_config=config,
                                    decoders={"image": tfds.decode.SkipDecoding()}).map(expert_crop).batch(BATCH)
        measure("tfds: as_dataset(...).map(tfds_crop)", variants(original, expert), args.rounds, args.batches)


if __name__ == "__main__":
    main()
