"""What the step's wait for a batch is made of, for a tiny Keras step on TensorFlow's GPU build.

    python3 benchmarks/tf_gpu/handover_beside_step.py [--scenario scenarios/gpu/tf_tiny_step.py]
                                                      [--steps 600] [--rounds 5] [--json PATH]

pipediag's host edge (docs/verdict.md) puts the step's wait in pipeline mode on the hand-over when
it is at most 2x what `get_next` of an already-made batch costs, timed with no step in between
(modes/handover.py). On the H100 (docs/gpu-validation.md, runs 28-35) tf_tiny_step's wait was
0.24-0.41 ms a batch while that `get_next` read 0.11-0.24 ms from one process to the next, so the
verdict flipped between host and input. This measures, in one process and in interleaved rounds,
plain TensorFlow and Keras only (no pipediag code on the timed path), the same loop pipediag's
modes run (`next()` timed as the wait, then `train_on_batch` until its logs are NumPy values):

  ready alone      get_next of `from_tensors(batch).repeat().prefetch(1)`, no step (what pipediag times)
  ready + step     the same iterator, with the step between the calls: the wait beside the step
  pipeline + step  the scenario's own pipeline with the step (pipeline mode)
  pipeline alone   the scenario's pipeline, no step (input_only mode)
  constant on GPU  the step on one batch already on /GPU:0, no get_next (synthetic mode)
  constant on CPU  the step on one batch on the CPU, no get_next: its copy to the GPU is in the step

If "ready + step" waits about as long as "pipeline + step", the extra wait is what the step does to
`get_next`, paid whatever the pipeline: a hand-over timed beside the step would be the bound the
host edge needs. Prints one line per round and the medians; `--json` keeps them. Runs on the CPU
too (then there is no device copy, and the numbers say nothing about a GPU).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(path: str):
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("scenario", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed_loop(next_batch, step, steps: int) -> dict:
    """Mean wait (time in next_batch) and mean step time (until the logs are NumPy), in ms."""
    waits, computes = [], []
    clock = time.perf_counter_ns
    for _ in range(steps):
        t0 = clock()
        batch = next_batch()
        t1 = clock()
        if step is not None:
            step(batch)
        t2 = clock()
        waits.append(t1 - t0)
        computes.append(t2 - t1)
    return {"wait_ms": statistics.fmean(waits) / 1e6, "step_ms": statistics.fmean(computes) / 1e6}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default=os.path.join(ROOT, "scenarios", "gpu", "tf_tiny_step.py"))
    p.add_argument("--steps", type=int, default=600, help="timed steps per measurement (default 600)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds of every measurement (default 5)")
    p.add_argument("--json", help="write the rounds and medians here")
    args = p.parse_args()

    scenario = load(args.scenario)
    model = scenario.make_model()
    dataset = scenario.make_dataset()
    first = next(iter(dataset))

    def step(batch):
        x, y = batch
        logs = model.train_on_batch(x, y, return_dict=True)
        return {k: float(v) for k, v in logs.items()}  # as pipediag's Keras step: its logs as Python numbers

    gpus = tf.config.list_logical_devices("GPU")
    on_gpu = first
    if gpus:
        with tf.device("/GPU:0"):
            on_gpu = tf.nest.map_structure(tf.identity, first)
    ready = iter(tf.data.Dataset.from_tensors(first).repeat().prefetch(1))
    pipeline = iter(dataset)
    alone = iter(scenario.make_dataset())

    for _ in range(200):  # warm-up: the train function traced, the pools filled
        step(next(pipeline))
        next(ready)
        next(alone)

    kinds = {
        "ready alone": lambda: timed_loop(lambda: next(ready), None, args.steps),
        "ready + step": lambda: timed_loop(lambda: next(ready), step, args.steps),
        "pipeline + step": lambda: timed_loop(lambda: next(pipeline), step, args.steps),
        "pipeline alone": lambda: timed_loop(lambda: next(alone), None, args.steps),
        "constant on GPU": lambda: timed_loop(lambda: on_gpu, step, args.steps),
        "constant on CPU": lambda: timed_loop(lambda: first, step, args.steps),
    }
    rounds = []
    for r in range(args.rounds):
        row = {name: measure() for name, measure in kinds.items()}
        rounds.append(row)
        print(f"round {r + 1}: " + "; ".join(f"{name} wait {m['wait_ms']:.3f} step {m['step_ms']:.3f}"
                                            for name, m in row.items()), flush=True)
    medians = {name: {key: statistics.median(row[name][key] for row in rounds) for key in ("wait_ms", "step_ms")}
               for name in kinds}
    print(f"\nTensorFlow {tf.__version__}, GPUs {[g.name for g in gpus]}, {args.rounds} rounds of {args.steps} steps; "
          "medians over the rounds (ms per batch):")
    print(f"{'':18}{'wait':>9}{'step':>9}")
    for name, m in medians.items():
        print(f"{name:18}{m['wait_ms']:9.3f}{m['step_ms']:9.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tensorflow": tf.__version__, "gpus": [g.name for g in gpus], "steps": args.steps,
                       "rounds": rounds, "medians": medians}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
