"""What `pipediag.keras.InputMonitor` costs `fit`: throughput with the monitor / without, in one run.

    flock /tmp/pipediag-cpu.lock python benchmarks/callback_overhead.py [--rounds 6] [--steps 300]

For each workload the same compiled model trains in alternating fits, without and with the
monitor (A B A B ..., so drift on a shared machine hits both arms alike). A tiny timing callback,
present in both arms, takes a clock reading at `on_train_batch_begin` of the first step after
warm-up and at `on_train_end`: steps / that time is the fit's throughput. The monitor's fixed
cost per fit (environment, sampler start, building the report at the end) is timed apart, as
seconds per fit, since it does not scale with the number of steps.

The monitor changes how each step gets its batch: it takes it eagerly with `next(iterator)` and
hands Keras's train function a one-batch list, instead of Keras fetching it inside its compiled
function. So, apart from fit, the same compiled model is also driven directly both ways
(`train_function(iterator)` vs `train_function([next(iterator)])`, alternating, no callbacks, no
sampler): that ratio is the path's own share of any difference.

Writes benchmarks/results/callback_overhead-<date>.json and prints a summary. The goal: the
throughput ratio (with / without) >= 0.99 on the realistic workload.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import psutil  # noqa: E402

from pipediag.backends.tf import keras, tf  # noqa: E402
from pipediag.keras import InputMonitor  # noqa: E402

WARMUP = 10


class Timer(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.start = None

    def on_train_batch_begin(self, batch, logs=None):
        if batch == WARMUP:
            self.start = time.perf_counter()

    def on_train_end(self, logs=None):
        self.end = time.perf_counter()


class TimedMonitor(InputMonitor):
    """The monitor, with its fixed cost per fit (start, and building the report) timed."""

    def on_train_begin(self, logs=None):
        t = time.perf_counter()
        super().on_train_begin(logs)
        self.fixed_s = time.perf_counter() - t

    def on_train_end(self, logs=None):
        t = time.perf_counter()
        super().on_train_end(logs)
        self.fixed_s += time.perf_counter() - t


def cnn_workload():
    """A small CNN on 32x32 RGB images, data in memory: the step dominates (tens of ms here)."""
    rng = np.random.default_rng(0)
    x = rng.random((1024, 32, 32, 3), dtype=np.float32)
    y = (np.arange(1024) % 10).astype("int64")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache().repeat().batch(64).prefetch(tf.data.AUTOTUNE)
    model = keras.Sequential([
        keras.Input((32, 32, 3)),
        keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(64, 3, activation="relu"), keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    return "cnn-32x32-batch64", model, ds


def mlp_workload():
    """A tiny MLP: about a millisecond per step, where any per-step cost shows most."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4096, 32)).astype("float32")
    y = (np.arange(4096) % 4).astype("int64")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache().repeat().batch(128).prefetch(tf.data.AUTOTUNE)
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(4)])
    return "tiny-mlp-batch128", model, ds


def measure(name, model, ds, rounds, steps):
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=1, steps_per_epoch=WARMUP + 20, verbose=0, shuffle=False)  # compile once, for both arms
    rates = {"without": [], "with": []}
    fixed_s = []
    for r in range(rounds):
        arms = ("without", "with") if r % 2 == 0 else ("with", "without")
        for arm in arms:
            timer = Timer()
            callbacks = [timer]
            if arm == "with":
                monitor = TimedMonitor(verbose=0)
                callbacks.append(monitor)
            model.fit(ds, epochs=1, steps_per_epoch=WARMUP + steps, verbose=0, shuffle=False, callbacks=callbacks)
            rates[arm].append(steps / (timer.end - timer.start))
            if arm == "with":
                assert monitor.diagnosis.modes["pipeline"].steps > 0, "the monitor measured nothing"
                fixed_s.append(monitor.fixed_s)
    pair = [w / wo for w, wo in zip(rates["with"], rates["without"])]
    direct = direct_paths(model, ds, rounds, steps)
    result = {
        "workload": name,
        "rounds": rounds,
        "timed_steps_per_fit": steps,
        "batches_per_sec_without": rates["without"],
        "batches_per_sec_with": rates["with"],
        "ratio_pooled": sum(rates["with"]) / sum(rates["without"]),
        "ratio_per_round_median": statistics.median(pair),
        "ratio_per_round_min_max": [min(pair), max(pair)],
        "step_ms_without_median": 1000 / statistics.median(rates["without"]),
        "monitor_fixed_s_per_fit_median": statistics.median(fixed_s),
        "direct_calls_batches_per_sec": direct,
        "direct_calls_ratio_list_over_iterator": statistics.median(direct["list"]) / statistics.median(direct["iterator"]),
    }
    return result


def direct_paths(model, ds, rounds, steps):
    """The two ways of feeding Keras's train function, called directly in a loop."""
    fn = model.train_function
    iterator = iter(ds)
    for _ in range(WARMUP):
        fn(iterator)
        fn([next(iterator)])
    rates = {"iterator": [], "list": []}
    for r in range(rounds):
        for arm in ("iterator", "list") if r % 2 == 0 else ("list", "iterator"):
            start = time.perf_counter()
            for _ in range(steps):
                logs = fn(iterator) if arm == "iterator" else fn([next(iterator)])
            float(logs["loss"])  # the last step has finished
            rates[arm].append(steps / (time.perf_counter() - start))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"))
    args = parser.parse_args()
    results = []
    for workload in (cnn_workload, mlp_workload):
        name, model, ds = workload()
        steps = args.steps if name.startswith("cnn") else args.steps * 5
        results.append(measure(name, model, ds, args.rounds, steps))
        r = results[-1]
        print(f"{name}: step {r['step_ms_without_median']:.2f} ms; with/without throughput "
              f"pooled {r['ratio_pooled']:.4f}, per round median {r['ratio_per_round_median']:.4f} "
              f"(min {r['ratio_per_round_min_max'][0]:.4f}, max {r['ratio_per_round_min_max'][1]:.4f}); "
              f"fixed cost {r['monitor_fixed_s_per_fit_median']:.3f} s per fit; direct calls, list/iterator path "
              f"{r['direct_calls_ratio_list_over_iterator']:.4f}", flush=True)
    now = dt.datetime.now(dt.timezone.utc)
    record = {
        "benchmark": "callback_overhead",
        "date": now.isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpu_logical": psutil.cpu_count(),
                    "memory_bytes": psutil.virtual_memory().total, "python": platform.python_version(),
                    "tensorflow": tf.__version__, "keras": keras.__version__, "gpu": None},
        "how": "alternating fits with and without InputMonitor in one process, under /tmp/pipediag-cpu.lock",
        "results": results,
    }
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"callback_overhead-{now:%Y-%m-%d}.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
