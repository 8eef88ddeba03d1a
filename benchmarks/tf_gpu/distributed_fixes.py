"""Plain TensorFlow, no pipediag: do the fixes `pipediag run` gives for a hand-over through a
tf.distribute iterator (verdict.handover_edge, fixes.recommend._distributed_handover_fixes) help?

The TF tutorial's custom MirroredStrategy loop (scenarios/scripts/tf_distribute_custom_training:
Fashion-MNIST-shaped data, `from_tensor_slices(...).shuffle(60000).batch(64)`, the tutorial's
CNN, one `tf.function` step per batch read by the loop's `for x in dist_dataset`), timed as it is
and with each fix, and Keras `fit` under the same strategy with `steps_per_execution` 1 and 8:

    python benchmarks/tf_gpu/distributed_fixes.py [--seconds 6] [--rounds 3]

- `loop`: the tutorial's loop as published: one step per call, `batch(64)` of a finite dataset
  (its last batch partial), a new iterator each epoch
- `loop_drop_remainder`: `batch(64, drop_remainder=True)`: static batch shapes
- `loop_repeat`: `batch(64).repeat()`, one iterator: an infinite dataset
- `loop_steps_per_call`: a `tf.function` that runs 8 steps, `next(iterator)` inside the graph
- `loop_batch_128`: the tutorial's loop with a batch twice as big (examples/s is what compares)
- `loop_no_strategy`: the same step without the strategy, a plain iterator (one device)
- `fit_spe1`, `fit_spe8`: Keras `fit` under the strategy, `steps_per_execution` 1 and 8

The last three forms of the dataset matter because TensorFlow's distributed iterator handles a
possible partial last batch (get_next_as_optional, `input_lib._enable_get_next_as_optional`)
unless the dataset is infinite or its shapes are static; its own comment says that path is slower.

Each variant is timed in `--rounds` interleaved rounds of `--seconds` after a warm-up of 2 s;
prints one JSON line per round and a table of median examples/s with each variant over `loop`.
Random data of the tutorial's shapes (nothing is downloaded); the model's weights differ per
variant, which does not change a step's cost.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time

import numpy as np
import tensorflow as tf

N_TRAIN = 60000
STEPS_PER_CALL = 8


def data(batch: int, form: str = "published"):
    """The tutorial's pipeline: `published` as it is (finite, the last batch partial), with
    `drop_remainder` (every batch 64: static shapes), or `repeat` (infinite, one iterator)."""
    rng = np.random.default_rng(0)
    images = rng.random((N_TRAIN, 28, 28, 1), dtype=np.float32)
    labels = rng.integers(0, 10, N_TRAIN).astype(np.uint8)
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(N_TRAIN)
    if form == "drop_remainder":
        return ds.batch(batch, drop_remainder=True)
    ds = ds.batch(batch)
    return ds.repeat() if form == "repeat" else ds


def create_model():
    regularizer = tf.keras.regularizers.L2(1e-5)
    return tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)),
        tf.keras.layers.Conv2D(32, 3, activation="relu", kernel_regularizer=regularizer),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(64, 3, activation="relu", kernel_regularizer=regularizer),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu", kernel_regularizer=regularizer),
        tf.keras.layers.Dense(10, kernel_regularizer=regularizer),
    ])


class Loop:
    """The tutorial's custom loop (or a variant): `run(seconds)` -> examples/s. A finite dataset
    gets a new iterator at each epoch's end, as the tutorial's `for x in dist_dataset` does."""

    def __init__(self, strategy, batch: int, form: str = "published", steps_per_call: int = 1):
        self.batch, self.steps_per_call = batch, steps_per_call
        scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
        with scope:
            model = create_model()
            optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)
            loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

        def train_step(inputs):
            images, labels = inputs
            with tf.GradientTape() as tape:
                predictions = model(images, training=True)
                loss = tf.nn.compute_average_loss(loss_object(labels, predictions))
                loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
            return loss

        ds = data(batch, form)
        self.dataset = ds if strategy is None else strategy.experimental_distribute_dataset(ds)
        self.iterator = iter(self.dataset)
        self.taken = 0  # batches taken from the current iterator
        full_calls = (N_TRAIN // batch) // steps_per_call  # whole calls an epoch holds
        if strategy is None:
            step = tf.function(train_step)
        elif steps_per_call == 1:
            @tf.function
            def step(x):
                return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(train_step, args=(x,)), axis=None)
        else:
            @tf.function
            def steps(iterator, n):
                total = tf.constant(0.0)
                for _ in tf.range(n):
                    losses = strategy.run(train_step, args=(next(iterator),))
                    total += strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
                return total

            n = tf.constant(steps_per_call)

            def per_call():
                # whole calls only: a new iterator where fewer than 8 batches are left in the epoch
                if self.taken >= full_calls * steps_per_call:
                    self.iterator, self.taken = iter(self.dataset), 0
                self.taken += steps_per_call
                return steps(self.iterator, n)

            self.per_call = per_call
            return

        def per_call():
            try:
                x = next(self.iterator)
            except StopIteration:  # the epoch's end: a new iterator, as a for loop over the dataset
                self.iterator = iter(self.dataset)
                x = next(self.iterator)
            return step(x)

        self.per_call = per_call

    def run(self, seconds: float) -> float:
        calls = 0
        start = time.perf_counter()
        while True:
            out = self.per_call()
            calls += 1
            if time.perf_counter() - start >= seconds:
                break
        float(out)  # the last call's result: its device work is done
        elapsed = time.perf_counter() - start
        return calls * self.steps_per_call * self.batch / elapsed


class Fit:
    """Keras fit under the strategy on the published (finite) pipeline with `steps_per_execution`:
    `run(seconds)` -> examples/s of one epoch, from fit(epochs=2) less fit(epochs=1), which leaves
    out what each fit call pays once (its iterator, the data adapter)."""

    def __init__(self, strategy, batch: int, steps_per_execution: int):
        with strategy.scope():
            self.model = create_model()
            self.model.compile(optimizer=tf.keras.optimizers.Adam(0.001),
                               loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                               steps_per_execution=steps_per_execution)
        self.ds = data(batch)

    def _fit_seconds(self, epochs: int) -> float:
        start = time.perf_counter()
        self.model.fit(self.ds, epochs=epochs, verbose=0)
        return time.perf_counter() - start

    def run(self, seconds: float) -> float:
        extra_s = self._fit_seconds(2) - self._fit_seconds(1)
        return N_TRAIN / extra_s if extra_s > 0 else float("nan")  # nan: noise beat the difference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="these variants only (a quick check on a CPU)")
    args = parser.parse_args()
    strategy = tf.distribute.MirroredStrategy()
    print(json.dumps({"tensorflow": tf.__version__, "replicas": strategy.num_replicas_in_sync,
                      "gpus": [d.name for d in tf.config.list_physical_devices("GPU")]}), flush=True)
    variants = {
        "loop": Loop(strategy, 64),
        "loop_drop_remainder": Loop(strategy, 64, "drop_remainder"),
        "loop_repeat": Loop(strategy, 64, "repeat"),
        "loop_steps_per_call": Loop(strategy, 64, steps_per_call=STEPS_PER_CALL),
        "loop_batch_128": Loop(strategy, 128),
        "loop_no_strategy": Loop(None, 64),
        "fit_spe1": Fit(strategy, 64, 1),
        "fit_spe8": Fit(strategy, 64, STEPS_PER_CALL),
    }
    if args.only:
        variants = {k: v for k, v in variants.items() if k in args.only}
    for v in variants.values():
        v.run(2.0)  # warm-up: tracing, autotuning, the shuffle buffer
    rates: dict[str, list[float]] = {k: [] for k in variants}
    for r in range(args.rounds):
        for name, v in variants.items():
            rate = v.run(args.seconds)
            rates[name].append(rate)
            print(json.dumps({"round": r, "variant": name, "examples_per_s": round(rate, 1)}), flush=True)
    base = statistics.median(rates["loop"]) if "loop" in rates else float("nan")
    fit_base = statistics.median(rates["fit_spe1"]) if "fit_spe1" in rates else float("nan")
    print("| variant | examples/s (median of rounds) | rounds | over its baseline |")
    print("|---|---:|---|---:|")
    for name, rs in rates.items():
        ref = fit_base if name.startswith("fit") else base
        print(f"| {name} | {statistics.median(rs):.0f} | {', '.join(f'{x:.0f}' for x in rs)} | "
              f"{statistics.median(rs) / ref:.2f}x |")


if __name__ == "__main__":
    main()
