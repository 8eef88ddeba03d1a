"""What a new iterator every epoch costs a loop, in plain TensorFlow: the expected answer for a
script whose loop pays each epoch's start (`RUN_EXPECTED` of a scenarios/scripts builder).

    python benchmarks/epoch_start_truth.py scenarios/scripts/CASE/builder.py [--epochs 40] [--rounds 5]

The builder gives `make_epoch_dataset()` (one epoch, finite, as the script's loop iterates it) and
`make_step()`. In alternating rounds, after one warm-up round of each, it times the same step over
`--epochs` epochs two ways: the script's way, `for batch in ds:` inside the epoch loop (a new
iterator each epoch), and one iterator over `ds.repeat()` made once, taking each epoch's number
of batches from it; and, as the ceiling, the step on one batch repeated as often. Prints seconds
per round and the per-epoch/one-iterator ratio per round and of the medians. Nothing pipediag's
runs through it; hold /tmp/cpu.lock around it on a shared machine (`flock /tmp/cpu.lock ...`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from accuracy import load_scenario  # noqa: E402  (the same import rules as the benchmark)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builder")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    module = load_scenario(args.builder)
    ds, step = module.make_epoch_dataset(), module.make_step()
    per_epoch_batches = sum(1 for _ in ds)
    batch = next(iter(ds))

    def new_iterator_each_epoch() -> float:
        t = time.perf_counter()
        for _ in range(args.epochs):
            for b in ds:
                step(b)
        return time.perf_counter() - t

    def one_iterator() -> float:
        t = time.perf_counter()
        it = iter(ds.repeat())
        for _ in range(args.epochs):
            for _ in range(per_epoch_batches):
                step(next(it))
        return time.perf_counter() - t

    def one_batch() -> float:
        t = time.perf_counter()
        for _ in range(args.epochs * per_epoch_batches):
            step(batch)
        return time.perf_counter() - t

    ways = {"new iterator each epoch": new_iterator_each_epoch, "one iterator over repeat()": one_iterator,
            "one batch repeated": one_batch}
    for way in ways.values():  # warm-up: tracing, the first pass's file reads
        way()
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, way in ways.items():
            seconds[name].append(way())
    print(f"{args.builder}: {per_epoch_batches} batches an epoch, {args.epochs} epochs a round, {args.rounds} rounds")
    for name, values in seconds.items():
        print(f"  {name}: {' '.join(f'{v:.3f}' for v in values)} s (median {statistics.median(values):.3f})")
    new, one = seconds["new iterator each epoch"], seconds["one iterator over repeat()"]
    print(f"  new iterator / one iterator: {statistics.median(new) / statistics.median(one):.2f}x of the medians, "
          f"per round {' '.join(f'{a / b:.2f}' for a, b in zip(new, one))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
