"""Decoding a JPEG at a reduced size (`decode_jpeg(..., ratio=2)`) before a downscaling resize,
against the full decode and the same resize: time and pixel difference, in plain TensorFlow.

    flock /tmp/cpu.lock python benchmarks/decode_ratio.py [--rounds 5] [--images 256]

Photo-like JPEGs (scenarios/_common.photo_like, quality 90) of --size pixels (320), resized to
--out (160), made in memory. Each round decodes and resizes every image once per variant
(`full`: decode_jpeg then resize; `ratio=R`: decode_jpeg(ratio=R) then the same resize, for each R
that still leaves at least --out pixels a side), in a tf.data map over the JPEGs held in memory,
batched by 64, with `map_parallelization` off so the map runs on one core (the per-image cost,
not how well two shared cores parallelize), variants interleaved; `decode only` times the same
decodes without the resize. The ratio of times is taken per round, reported as median and range.
The difference is the mean and max absolute difference of the resized float images (0-255) from
the full decode's, over all images.
Wall time is shared with other processes: hold the CPU lock.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios"))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from _common import jpeg_bytes  # noqa: E402


def variant(ratio: int, out: int | None, antialias: bool):
    def run(jpeg):
        image = tf.io.decode_jpeg(jpeg, channels=3, ratio=ratio)
        return image if out is None else tf.image.resize(image, [out, out], antialias=antialias)
    return run


def serial(jpegs: list[bytes], fn):
    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = False
    return tf.data.Dataset.from_tensor_slices(jpegs).map(fn).batch(64).with_options(options)


def seconds(ds) -> float:
    start = time.perf_counter()
    for _ in ds:
        pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--size", type=int, default=320)
    parser.add_argument("--out", type=int, default=160)
    parser.add_argument("--antialias", action="store_true", help="resize with antialias=True")
    args = parser.parse_args()
    jpegs = jpeg_bytes(args.images, args.size, seed=7)
    ratios = [r for r in (1, 2, 4, 8) if args.size // r >= args.out]
    sets = {(r, kind): serial(jpegs, variant(r, args.out if kind == "resize" else None, args.antialias))
            for r in ratios for kind in ("resize", "decode only")}
    outputs = {r: np.concatenate([b.numpy() for b in sets[(r, "resize")]]) for r in ratios}  # also warms up
    times: dict[tuple, list[float]] = {key: [] for key in sets}
    for _ in range(args.rounds):
        for key, ds in sets.items():
            times[key].append(seconds(ds))
    print(f"{args.images} JPEGs {args.size}x{args.size} -> {args.out}x{args.out}, antialias={args.antialias}, "
          f"{args.rounds} rounds, {os.cpu_count()} cores")
    for r in ratios:
        for kind in ("resize", "decode only"):
            per_image_ms = statistics.median(times[(r, kind)]) / args.images * 1e3
            speed = [t1 / tr for t1, tr in zip(times[(1, kind)], times[(r, kind)])]
            text = f"ratio={r} {kind}: {per_image_ms:.3f} ms/image, {statistics.median(speed):.2f}x ratio=1 " \
                   f"(range {min(speed):.2f}-{max(speed):.2f})"
            if kind == "resize":
                diff = np.abs(outputs[r] - outputs[1])
                text += f"; |diff| mean {diff.mean():.2f} max {diff.max():.0f} of 255"
            print(text)


if __name__ == "__main__":
    main()
