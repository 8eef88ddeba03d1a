"""The rebuild effect: is a pipeline rebuilt from its own graph as fast as the one built in Python?

    python benchmarks/rebuild_effect.py                  # 20 interleaved rounds of 0.7-s turns
    python benchmarks/rebuild_effect.py --rounds 40 --turn-seconds 1

pipediag's tuned mode (and every ablation variant, and `pipediag.tuned()`) runs the user's graph
rebuilt with `DatasetFromGraph`; pipeline mode and a patched builder run it as Python built it. If
a rebuild alone changes the speed, a tuned/pipeline ratio is not the change's effect. This measures
it on `from_tensor_slices(numpy).repeat().batch(1024)` (65,536 x 32 float32 rows, input only), in
three forms, each with tf.data's defaults, with autotune off, and with prefetch injection off:

- `python`: built in Python, as the user's code builds it (every ratio is against this one);
- `variant`: the same Dataset object wrapped again by its variant tensor (`from_variant`), no graph;
- `rebuilt`: serialized to a GraphDef and rebuilt from it, as pipediag's tuned mode does.

Each round runs every form once, in alternating order (ABC, CBA, ...), so drift of the machine
falls on all of them alike; a ratio is the geometric mean of the rounds' ratios with a 95%
interval over rounds. Writes results/rebuild_effect-<date>.md. Takes the CPU lock itself.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
from accuracy import RESULTS, cpu_lock, machine  # noqa: E402  (the benchmarks share the lock and the machine line)

from pipediag.stats import mean_ci  # noqa: E402

ROWS, FEATURES, BATCH = 65_536, 32, 1024
SETTINGS = ("defaults", "autotune off", "inject_prefetch off")


def forms(tf, setting: str):
    from pipediag.builder.graph import PipelineGraph

    rng = np.random.default_rng(4)
    x = rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
    y = (np.arange(ROWS) % 10).astype(np.int64)

    def python():
        options = tf.data.Options()
        if setting == "autotune off":
            options.autotune.enabled = False
        if setting == "inject_prefetch off":
            options.experimental_optimization.inject_prefetch = False
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(BATCH).with_options(options)

    made = python()
    return {
        "python": python(),
        "variant": tf.data.experimental.from_variant(made._variant_tensor, structure=made.element_spec),
        "rebuilt": PipelineGraph.from_dataset(python()).to_dataset(),
    }


def turn(dataset, seconds: float) -> float:
    """Batches per second over one turn, from a fresh iterator (its first batch not timed), which is
    dropped at the end: a live iterator would keep filling its prefetch buffer while the other
    forms run, and start its next turn with a burst."""
    it = iter(dataset)
    next(it)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        next(it)
        n += 1
    rate = n / (time.perf_counter() - start)
    del it
    return rate


def measure(rounds: int, turn_seconds: float) -> list[dict]:
    import pipediag.backends.tf  # noqa: F401  (TensorFlow with pipediag's log filtering)
    from pipediag.backends.tf import tf

    rows = []
    for setting in SETTINGS:
        datasets = forms(tf, setting)
        names = list(datasets)
        log_ratios = {name: [] for name in names}
        rates = {name: [] for name in names}
        for r in range(rounds):
            order = names if r % 2 == 0 else names[::-1]
            got = {name: turn(datasets[name], turn_seconds) for name in order}
            for name in names:
                rates[name].append(got[name])
                log_ratios[name].append(float(np.log(got[name] / got["python"])))
        for name in names:
            mean = float(np.mean(log_ratios[name]))
            low, high = mean_ci(log_ratios[name]) or (mean, mean)  # under 3 rounds: no interval
            rows.append({"setting": setting, "form": name, "batches_per_sec": float(np.median(rates[name])),
                         "ratio": float(np.exp(mean)), "low": float(np.exp(low)), "high": float(np.exp(high))})
        del datasets
    return rows


def table(rows: list[dict], rounds: int, turn_seconds: float) -> str:
    lines = [f"# The rebuild effect — {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC", "",
             "Machine: {cpu_logical} logical CPUs, {memory_total_gib} GiB, {platform}, Python {python}; {packages}; "
             "pipediag at {git_commit}.".format(**machine()), "",
             f"`python benchmarks/rebuild_effect.py --rounds {rounds} --turn-seconds {turn_seconds:g}`: "
             f"`from_tensor_slices(numpy).repeat().batch({BATCH})`, {ROWS:,} x {FEATURES} float32 rows, input only; "
             "each form's ratio is against the Python-built pipeline of the same setting, over interleaved rounds "
             "(geometric mean, 95% interval over rounds).", "",
             "| setting | form | batches/s (median) | / python [95%] |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['setting']} | {r['form']} | {r['batches_per_sec']:.0f} | "
                     f"{r['ratio']:.3f} [{r['low']:.3f}, {r['high']:.3f}] |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--turn-seconds", type=float, default=0.7)
    parser.add_argument("--no-lock", action="store_true", help="do not take /tmp/pipediag-cpu.lock")
    args = parser.parse_args()
    with cpu_lock(not args.no_lock):
        rows = measure(args.rounds, args.turn_seconds)
    text = table(rows, args.rounds, args.turn_seconds)
    print(text)
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"rebuild_effect-{dt.datetime.now(dt.timezone.utc):%Y-%m-%d-%H%M}.md")
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
