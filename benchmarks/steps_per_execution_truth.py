"""What several batches per compiled call gain a Keras `fit`, in plain TensorFlow: the expected
answer for a builder whose script hands each batch to `fit` through a tf.distribute iterator (the
`steps_per_call` fix of a host verdict at the hand-over).

    python benchmarks/steps_per_execution_truth.py scenarios/scripts/CASE/builder.py [--steps 240] [--rounds 5] [--k 8]
        [--warmup-steps 600]

The builder gives `make_dataset()` (repeated) and `make_model()` (compiled; under its strategy's
scope where it has one). Two models are made: one as the builder compiles it (steps_per_execution
1) and one given `--k` steps per execution (`model.steps_per_execution`, which `make_train_function`
reads, set before the first `fit`). After one warm-up `fit` of each over `--warmup-steps` (the
trace, and a pipeline's cache completed: a cache() whose first pass is cut short is not kept, and
every later iterator would fill it again), alternating rounds time `fit(ds, epochs=1,
steps_per_epoch=--steps, verbose=0)` of each; each `fit` makes a new iterator, as each of a
script's epochs does. Prints seconds per round and
the 1-step/k-step ratio per round and of the medians. Nothing pipediag's runs through it; hold
/tmp/cpu.lock around it on a shared machine (`flock /tmp/cpu.lock ...`).
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
    parser.add_argument("--steps", type=int, default=240)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--warmup-steps", type=int, default=600)
    args = parser.parse_args(argv)
    module = load_scenario(args.builder)
    ds = module.make_dataset()
    one, several = module.make_model(), module.make_model()
    several.steps_per_execution = args.k
    models = {"1 step per call": one, f"{args.k} steps per call": several}

    def timed(model, steps: int) -> float:
        t = time.perf_counter()
        model.fit(ds, epochs=1, steps_per_epoch=steps, verbose=0)
        return time.perf_counter() - t

    for model in models.values():  # warm-up: the trace, the cache's first pass
        timed(model, args.warmup_steps)
    seconds: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.rounds):
        for name, model in models.items():
            seconds[name].append(timed(model, args.steps))
    print(f"{args.builder}: fit over {args.steps} steps a round, {args.rounds} rounds")
    for name, values in seconds.items():
        print(f"  {name}: {' '.join(f'{v:.3f}' for v in values)} s (median {statistics.median(values):.3f}, "
              f"{args.steps / statistics.median(values):.1f} steps/s)")
    a, b = seconds["1 step per call"], seconds[f"{args.k} steps per call"]
    print(f"  1 / {args.k} steps per call: {statistics.median(a) / statistics.median(b):.2f}x of the medians, "
          f"per round {' '.join(f'{x / y:.2f}' for x, y in zip(a, b))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
