"""What wrapping an eager training step in tf.function gains, in plain TensorFlow: the expected
answer for a builder whose step runs eagerly (the `tf_function` fix of a scenarios/scripts case).

    python benchmarks/eager_step_truth.py scenarios/scripts/CASE/builder.py [--steps 200] [--rounds 5]

The builder gives `make_dataset()` and `make_step()`. One batch of the dataset is fed to two
steps, each made by its own `make_step()` call (two models, so that neither trains the other's):
the step as written, and the same step wrapped in `tf.function`. After one warm-up round of each
(the trace), alternating rounds of `--steps` steps each are timed; the last step's result is read
as a NumPy value, so the work is done before the clock stops. Prints steps per second per round,
and the compiled/eager ratio per round and of the medians. Nothing pipediag's runs through it;
hold /tmp/cpu.lock around it on a shared machine (`flock /tmp/cpu.lock ...`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from accuracy import load_scenario  # noqa: E402  (the same import rules as the benchmark)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builder")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    import tensorflow as tf

    module = load_scenario(args.builder)
    batch = next(iter(module.make_dataset()))
    ways = {"eager (as written)": module.make_step(), "in tf.function": tf.function(module.make_step())}

    def timed(step) -> float:
        t = time.perf_counter()
        for _ in range(args.steps):
            result = step(batch)
        np.asarray(result)  # the last step's work done before the clock stops
        return args.steps / (time.perf_counter() - t)

    for step in ways.values():  # warm-up: the trace, the first calls
        timed(step)
    rates: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, step in ways.items():
            rates[name].append(timed(step))
    print(f"{args.builder}: {args.steps} steps a round on one batch, {args.rounds} rounds")
    for name, values in rates.items():
        print(f"  {name}: {' '.join(f'{v:.1f}' for v in values)} steps/s (median {statistics.median(values):.1f})")
    eager, compiled = rates["eager (as written)"], rates["in tf.function"]
    print(f"  in tf.function / eager: {statistics.median(compiled) / statistics.median(eager):.2f}x of the medians, "
          f"per round {' '.join(f'{c / e:.2f}' for c, e in zip(compiled, eager))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
