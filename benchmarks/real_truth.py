"""Plain-TensorFlow measurements that set a scenario's expected answer (not pipediag's).

    flock /tmp/pipediag-cpu.lock python benchmarks/real_truth.py scenarios/real/tf_csv.py [...]
    flock /tmp/pipediag-cpu.lock python benchmarks/real_truth.py scenarios/real/*.py --markdown truth.md

For each scenario file (one with make_dataset, make_model or make_step, and expert_dataset where
there is one: the script cases of scenarios/scripts/ have none), in this order and in one process:

- free step: the step on one constant batch (the first batch of make_dataset), steps/s;
- input alone: make_dataset iterated with nothing else, batches/s;
- fed: the step fed by make_dataset, steps/s;
- expert alone and expert fed: the same for expert_dataset (after EXPERT_WARMUP_BATCHES batches
  pulled from the same iterator, e.g. one epoch that fills its cache);
- prefixes: each prefix of make_dataset (the dataset objects that TensorFlow chains through
  `_input_dataset`), iterated alone: elements/s and the cost per final batch, so that the stage
  that costs most shows as the largest step up between consecutive prefixes. A prefix before the
  batch is pulled element by element from Python (~0.1 ms per element by itself), so there a
  cheap per-element stage reads far higher than it costs; compare prefixes after the batch, or
  the forms' rates, for those.

A Keras model steps through `train_on_batch` (the compiled train function `fit` uses); a step
function gets NumPy batches when the scenario sets BATCH_FORMAT = "numpy", and its result is
converted with numpy.asarray, which waits for a JAX computation to finish. With `--repeats N`
the whole sequence runs N times and each number is given as the median with its range. The rule
the scenarios use (`call`): input when input alone < 0.8x the free step; input through CPU
contention when the fed step runs >= 1.15x slower than the free one, the repeats' ranges apart
(on a CPU-only machine the pipeline's work slows the step that shares its cores); compute when
input alone > 1.5x and the fed step is not so slowed. The fed rate counts: until 2026-12-01 18:30
the rule looked at input alone only, and three real scenarios (tf_text, kerasio_timeseries,
flax_imagenet_jax) were set `compute` while their fed step ran 0.6-0.75x the free one.

Hold the CPU lock (`flock /tmp/pipediag-cpu.lock ...`): the numbers are timings.
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import os
import statistics
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from accuracy import load_scenario  # noqa: E402  (the same import rules as the benchmark)


def _build(fn: Any, batch_size: int | None) -> Any:
    if batch_size is not None and "batch_size" in inspect.signature(fn).parameters:
        return fn(batch_size=batch_size)
    return fn()


def _rate(run_one: Any, seconds: float, warmup: int) -> float:
    """Calls per second of `run_one()` over `seconds`, after `warmup` calls."""
    for _ in range(warmup):
        run_one()
    n, start = 0, time.perf_counter()
    while True:
        run_one()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed


def _endless(dataset: Any) -> Any:
    """Next element, restarting the iterator at the end (a finite prefix measured like the rest)."""
    state = {"it": iter(dataset)}

    def pull() -> Any:
        try:
            return next(state["it"])
        except StopIteration:
            state["it"] = iter(dataset)
            return next(state["it"])

    return pull


class _Stepper:
    def __init__(self, module: Any) -> None:
        import numpy as np

        self.numpy = getattr(module, "BATCH_FORMAT", "tf") == "numpy"
        if hasattr(module, "make_model"):
            import keras

            model = module.make_model()

            def run(batch: Any) -> Any:
                x, y, w = keras.utils.unpack_x_y_sample_weight(batch)
                return model.train_on_batch(x, y, sample_weight=w)
        else:
            step = module.make_step()

            def run(batch: Any) -> Any:
                return np.asarray(step(batch))

        self.run = run

    def convert(self, batch: Any) -> Any:
        if not self.numpy:
            return batch
        import tensorflow as tf

        return tf.nest.map_structure(lambda t: t.numpy(), batch)


def _repeated(dataset: Any) -> Any:
    """A finite prefix repeated (TensorFlow restarts it in C++, not a new Python iterator per pass:
    a 20-element file list would otherwise measure iterator creation)."""
    import tensorflow as tf

    if dataset.cardinality().numpy() == tf.data.INFINITE_CARDINALITY:
        return dataset
    return dataset.repeat()


def _prefixes(dataset: Any) -> list[Any]:
    """The chain of datasets from the source to `dataset` (TensorFlow's own `_input_dataset` links)."""
    chain = [dataset]
    while getattr(chain[-1], "_input_dataset", None) is not None:
        chain.append(chain[-1]._input_dataset)
    return chain[::-1]


def _label(ds: Any) -> str:
    name = type(ds).__name__.lstrip("_")
    for attr in ("_map_func", "_predicate"):
        wrapper = getattr(ds, attr, None)
        fn = getattr(wrapper, "function", None)
        if fn is not None:
            fname = getattr(fn, "name", b"")
            fname = fname.decode() if isinstance(fname, bytes) else str(fname)
            return f"{name}({fname})"
    for attr in ("_batch_size", "_buffer_size", "_count"):
        value = getattr(ds, attr, None)
        if value is not None:
            try:
                return f"{name}({int(value)})"
            except (TypeError, ValueError):
                pass
    return name


def measure(path: str, seconds: float, prefix_seconds: float, batch_size: int | None) -> dict[str, Any]:
    module = load_scenario(path)
    out: dict[str, Any] = {"scenario": os.path.splitext(os.path.basename(path))[0]}
    stepper = _Stepper(module)

    ds = _build(module.make_dataset, batch_size)
    first = stepper.convert(next(iter(ds)))
    out["free_steps_per_sec"] = _rate(lambda: stepper.run(first), seconds, warmup=3)

    pull = _endless(ds)
    out["input_batches_per_sec"] = _rate(pull, seconds, warmup=3)
    pull = _endless(_build(module.make_dataset, batch_size))
    out["fed_steps_per_sec"] = _rate(lambda: stepper.run(stepper.convert(pull())), seconds, warmup=3)

    if hasattr(module, "expert_dataset"):  # scenarios/scripts/ cases have none: the script is the form
        warm = int(getattr(module, "EXPERT_WARMUP_BATCHES", 0)) + 3
        pull = _endless(_build(module.expert_dataset, batch_size))
        out["expert_input_batches_per_sec"] = _rate(pull, seconds, warmup=warm)
        pull = _endless(_build(module.expert_dataset, batch_size))
        out["expert_fed_steps_per_sec"] = _rate(lambda: stepper.run(stepper.convert(pull())), seconds, warmup=warm)

    # Elements of each prefix per final batch: from the end, they multiply at each batch stage.
    chain = _prefixes(_build(module.make_dataset, batch_size))
    factors = []
    factor = 1
    for ds_i in reversed(chain):
        factors.append(factor)
        size = getattr(ds_i, "_batch_size", None)
        if size is not None and "Batch" in type(ds_i).__name__:
            factor *= int(size)
    factors.reverse()
    rows = []
    for ds_i, per_batch in zip(chain, factors):
        rate = _rate(_endless(_repeated(ds_i)), prefix_seconds, warmup=3)
        rows.append({"stage": _label(ds_i), "elements_per_sec": rate, "ms_per_final_batch": 1000.0 * per_batch / rate})
    out["prefixes"] = rows
    return out


def _merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in runs[0] if k.endswith("_per_sec")]
    merged: dict[str, Any] = {"scenario": runs[0]["scenario"], "repeats": len(runs)}
    for k in keys:
        values = [r[k] for r in runs]
        merged[k] = (statistics.median(values), min(values), max(values))
    merged["prefixes"] = [
        {"stage": row["stage"],
         "ms_per_final_batch": statistics.median(r["prefixes"][i]["ms_per_final_batch"] for r in runs)}
        for i, row in enumerate(runs[0]["prefixes"])
    ]
    free = merged["free_steps_per_sec"][0]
    merged["input_over_free"] = merged["input_batches_per_sec"][0] / free
    if "expert_input_batches_per_sec" in merged:
        merged["expert_input_over_free"] = merged["expert_input_batches_per_sec"][0] / free
    merged["fed_over_free"] = merged["fed_steps_per_sec"][0] / free
    merged["call"] = call(merged)
    return merged


def call(merged: dict[str, Any]) -> str:
    """The expected bottleneck these numbers give. Input when the input alone gives < 0.8x the free
    step's rate; input through CPU contention when, however fast the input alone, the fed step runs
    >= 1.15x slower than the free one with the repeats' ranges apart by that much (the pipeline's
    CPU work slows the step sharing the cores: what training gets is the fed rate); compute when
    the input alone gives > 1.5x and the fed step is not so slowed; else an edge."""
    ratio = merged["input_over_free"]
    free_lo = merged["free_steps_per_sec"][1]
    fed_hi = merged["fed_steps_per_sec"][2]
    if ratio < 0.8:
        return "input"
    if fed_hi * 1.15 <= free_lo:
        return "input (contention)"
    return "compute" if ratio > 1.5 else "edge (between 0.8x and 1.5x)"


def _fmt(triple: tuple[float, float, float] | None) -> str:
    if triple is None:
        return "—"
    med, lo, hi = triple
    return f"{med:.1f}" if lo == hi else f"{med:.1f} ({lo:.1f}–{hi:.1f})"


def markdown(results: list[dict[str, Any]], command: str) -> str:
    lines = [
        f"# Plain-TensorFlow measurements ({dt.datetime.now(dt.timezone.utc).isoformat(timespec='minutes')})",
        "",
        f"`{command}`, {os.cpu_count()} logical CPUs; median (min–max) of the repeats; rates per second.",
        "",
        "| scenario | free step | input alone | fed | expert alone | expert fed | input/free | call |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in results:
        lines.append(
            f"| {m['scenario']} | {_fmt(m['free_steps_per_sec'])} | {_fmt(m['input_batches_per_sec'])} | "
            f"{_fmt(m['fed_steps_per_sec'])} | {_fmt(m.get('expert_input_batches_per_sec'))} | "
            f"{_fmt(m.get('expert_fed_steps_per_sec'))} | {m['input_over_free']:.2f} | {m['call']} |"
        )
    for m in results:
        lines += ["", f"{m['scenario']}: prefixes of make_dataset, ms per final batch (median)", ""]
        previous = 0.0
        for row in m["prefixes"]:
            lines.append(f"- {row['stage']}: {row['ms_per_final_batch']:.1f} ms "
                         f"(+{row['ms_per_final_batch'] - previous:.1f})")
            previous = row["ms_per_final_batch"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+", help="scenario files")
    parser.add_argument("--seconds", type=float, default=5.0, help="each timed measurement (default 5)")
    parser.add_argument("--prefix-seconds", type=float, default=4.0, help="each prefix (default 4)")
    parser.add_argument("--repeats", type=int, default=1, help="run the whole sequence N times (default 1)")
    parser.add_argument("--batch-size", type=int, help="passed to make_dataset/expert_dataset")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table to FILE")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    results = []
    for path in args.scenarios:
        runs = [measure(path, args.seconds, args.prefix_seconds, args.batch_size) for _ in range(args.repeats)]
        results.append(_merge(runs))
        print(markdown(results[-1:], "python benchmarks/real_truth.py"), flush=True)
    text = markdown(results, "python benchmarks/real_truth.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
