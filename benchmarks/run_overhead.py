"""What `pipediag run`'s observing costs a training loop: throughput with the hooks / without, in one run.

    flock /tmp/cpu.lock python benchmarks/run_overhead.py [--rounds 36] [--seconds 0.5]

Issue 24, item 5: the observing hooks cost <= 1% of step time for steps >= 5 ms and <= 5% for
1 ms steps. Measured in one process, in alternating arms (A B, B A, ... so drift on a shared
machine hits both alike), for two kinds of loop:

- a custom loop, `for batch in ds: step(batch)`, its `tf.function` step a chain of 128x128
  matmuls sized at start to about 1, 5 and 20 ms on this machine (the sizes are reported as
  measured), over `from_tensors(...).repeat().prefetch(2)`, so the step dominates;
- Keras 3 `fit` on benchmarks/callback_overhead.py's tiny MLP (about 1 ms) and small CNN (about
  10 ms), a fresh `fit` per arm.

"With" is pipediag run's observe phase as `run.script.run_script` sets it up: the real Session,
Hooks (Dataset.__init__/__iter__, the strategy methods, Model.fit) and Sampler (CPU readings at
the default 10 Hz in its own thread), installed in the same order, one fresh session per arm. Its
stop rule never lets the observation end (tolerances of 1e-12, no time or step cap) and checks
stability from the first step (`min_seconds=0`): the stability check runs at its real cadence
(every 12.5% more steps) for the whole arm, where a real observation starts it after 2 s, and no
counterfactual window ever starts. Set-up and tear-down (hooks in and out, the sampler's start,
the first warm-up steps) are outside the timed span.

Fit's hook also changes how each step gets its batch (an eager `next(iterator)` handed to Keras's
train function as a one-batch list, as `pipediag.keras.InputMonitor` does), which on its own
changed fit's speed in callback_overhead-2026-11-30. So the fit workloads have a third arm, "path":
the same fit callback (`run.fit._FitTap`) with a session that only calls `next` — no timing, no
sampler, no hooks. with/path is the observing's own cost; with/without is what a user sees.

Writes benchmarks/results/run_overhead-<date>.json and prints a summary.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

WARMUP = 10  # steps run before the clock starts, in every arm
MATMUL_N = 128
GOALS = ((5.0, 0.99), (0.0, 0.95))  # (steps of at least this many ms, the lowest throughput ratio allowed)


# -- the numbers (no TensorFlow) --------------------------------------------------------------------
def goal_ratio(step_ms: float) -> float:
    """The lowest with/without throughput ratio the goal allows for steps of `step_ms`.

    The issue names two points, >= 5 ms (1%) and 1 ms (5%); a step between them is held to the
    1 ms goal, a step under 1 ms too (its goal would only be looser)."""
    return next(ratio for at_least_ms, ratio in GOALS if step_ms >= at_least_ms)


def summarize(rates: dict[str, list[float]], arm: str = "with", against: str = "without") -> dict:
    """Ratios of `arm`'s throughput over `against`'s: per round (same round, both arms), their
    median with its distribution-free 95% interval (None under 6 rounds), min and max, and pooled
    (sum over sum)."""
    a, b = rates[arm], rates[against]
    if not a or len(a) != len(b):
        raise ValueError(f"need the same number of rounds for {arm} and {against}, got {len(a)} and {len(b)}")
    from pipediag import stats

    pair = [x / y for x, y in zip(a, b)]
    return {"per_round": pair, "median": statistics.median(pair), "median_ci95": stats.median_ci(pair),
            "min": min(pair), "max": max(pair), "pooled": sum(a) / sum(b)}


def verdict(step_ms: float, ratio_median: float) -> dict:
    goal = goal_ratio(step_ms)
    return {"goal_ratio": goal, "meets": ratio_median >= goal}


def arm_order(arms: tuple[str, ...], round_index: int) -> tuple[str, ...]:
    """Round r runs the arms rotated by r; every other cycle of len(arms) rounds runs them
    reversed. Over 2 * len(arms) rounds each arm goes first and last equally often, and runs
    before each other arm as often as after it."""
    n = len(arms)
    k = round_index % n
    rotated = arms[k:] + arms[:k]
    return rotated[::-1] if (round_index // n) % 2 else rotated


# -- TensorFlow from here --------------------------------------------------------------------------
def _tf():
    from pipediag.backends.tf import keras, tf

    return tf, keras


def observing_session():
    """A Session in its observe phase that stays there: its stop rule never ends the observation
    (no time or step cap, tolerances of 1e-12) and checks stability from the first step."""
    from pipediag.records.options import RunOptions
    from pipediag.records.run import StopRule
    from pipediag.run.session import ScriptPlan, Session

    never = StopRule(max_seconds=math.inf, min_seconds=0.0, max_steps=sys.maxsize,
                     rel_half_width=1e-12, mean_rel_half_width=1e-12)
    return Session(ScriptPlan(rule=never), RunOptions(), "benchmarks/run_overhead.py")


class Observed:
    """pipediag run's observe phase, set up as run.script.run_script sets it up (no script launched)."""

    def __init__(self):
        from pipediag.api.options import sample_hz
        from pipediag.run.hooks import Hooks
        from pipediag.samples.environment import collect
        from pipediag.samples.gpu import GpuReader
        from pipediag.samples.sampler import Sampler
        from pipediag.samples.selection import GpuSelection

        self.session = session = observing_session()
        options = session.options
        self.sampler = Sampler(gpu_reader=GpuReader(options.nvml_lib, gpus=GpuSelection.choose(options.gpus)),
                               hz=sample_hz(options), clock_ns=options.clock_ns)
        self.environment = collect(nvml_lib=options.nvml_lib, container=self.sampler.container)
        self.hooks = Hooks(session)

    def __enter__(self):
        self.hooks.install()
        self.sampler.start()
        self.session.start(self.sampler, self.environment)
        self._started_s = time.perf_counter()
        return self

    def __exit__(self, *exc):
        from pipediag.run.session import OBSERVING

        self.sampler_cpu_s = _thread_cpu_s("pipediag-sampler")  # in clock ticks (10 ms): summed over arms
        self.wall_s = time.perf_counter() - self._started_s
        self.hooks.uninstall()
        self.session.close()
        self.log = self.sampler.stop()
        self.still_observing = self.session.phase == OBSERVING and self.session.fault is None
        self.steps_seen = sum(s.steps.steps for s in self.session.sources.values())
        return False


def _thread_cpu_s(name: str) -> float:
    """CPU seconds (user + system) the running thread called `name` has used since it started."""
    import threading

    import psutil

    tid = next(t.native_id for t in threading.enumerate() if t.name == name)
    return next(t.user_time + t.system_time for t in psutil.Process().threads() if t.id == tid)


def take_cost_us(steps: int = 10_000, repeats: int = 5) -> dict:
    """µs per batch that the observe path (Tap -> Session.take -> Source.observe) adds to a
    Python iterator's `next`: no TensorFlow op, no step, no sampler. `steps` is a 10 s
    observation of 1 ms steps; the stability check runs at its cadence throughout. The fastest
    of `repeats` fresh sessions, each against a plain `next` loop timed beside it."""
    import itertools

    from pipediag.run.observe import LOOP

    tapped_s, plain_s = [], []
    for _ in range(repeats):
        session = observing_session()
        tap = session.tap(session.source_for(object(), LOOP), itertools.repeat(0))
        plain = itertools.repeat(0)
        for it, out in ((tap, tapped_s), (plain, plain_s)):
            start = time.perf_counter()
            for _ in range(steps):
                next(it)
            out.append(time.perf_counter() - start)
    return {"steps": steps, "repeats": repeats, "tapped_us_per_next": min(tapped_s) / steps * 1e6,
            "plain_us_per_next": min(plain_s) / steps * 1e6,
            "added_us_per_step": (min(tapped_s) - min(plain_s)) / steps * 1e6}


def matmul_step(k: int):
    tf, _ = _tf()
    w = tf.Variable(tf.random.normal((MATMUL_N, MATMUL_N), stddev=1.0 / MATMUL_N ** 0.5, seed=1))

    @tf.function
    def step(batch):
        x = batch
        for _ in range(k):
            x = tf.tanh(tf.matmul(x, w))
        return tf.reduce_sum(x)

    return step


def cheap_dataset():
    tf, _ = _tf()
    return tf.data.Dataset.from_tensors(tf.random.normal((MATMUL_N, MATMUL_N), seed=2)).repeat().prefetch(2)


def time_calls(step, batch, calls: int) -> float:
    """ms per call of `step` on `batch`, called directly."""
    for _ in range(3):
        step(batch)
    start = time.perf_counter()
    for _ in range(calls):
        out = step(batch)
    float(out)
    return (time.perf_counter() - start) * 1000 / calls


def calibrate(target_ms: float) -> tuple[int, float]:
    """The number of matmuls that makes the step about `target_ms` here, and its ms per call."""
    tf, _ = _tf()
    batch = tf.random.normal((MATMUL_N, MATMUL_N), seed=3)
    k, ms = 8, time_calls(matmul_step(8), batch, 50)
    for _ in range(3):
        k = max(1, round(k * target_ms / ms))
        ms = time_calls(matmul_step(k), batch, max(20, int(300 / max(ms, 0.1))))
        if abs(ms - target_ms) / target_ms < 0.1:
            break
    return k, ms


def run_loop(ds, step, steps: int) -> float:
    """The user's loop; batches per second over `steps` steps after WARMUP."""
    start = None
    for i, batch in enumerate(ds):
        if i == WARMUP:
            start = time.perf_counter()
        elif i == WARMUP + steps:
            break
        out = step(batch)
    float(out)
    return steps / (time.perf_counter() - start)


def measure_loop(target_ms: float, rounds: int, seconds: float) -> dict:
    k, calibrated_ms = calibrate(target_ms)
    step, ds = matmul_step(k), cheap_dataset()
    run_loop(ds, step, 20)  # trace once, for both arms
    steps = max(50, int(seconds * 1000 / calibrated_ms))
    rates: dict[str, list[float]] = {"without": [], "with": []}
    checks = []
    for r in range(rounds):
        for arm in arm_order(("without", "with"), r):
            if arm == "without":
                rates[arm].append(run_loop(ds, step, steps))
                continue
            observed = Observed()
            with observed:
                rates[arm].append(run_loop(ds, step, steps))
            checks.append(observed)
    return finish(f"loop-{target_ms:g}ms", {"matmuls": k, "matmul_n": MATMUL_N, "calibrated_ms": calibrated_ms},
                  steps, rates, checks, goal_ms=target_ms)


def run_fit(model, ds, steps: int, callbacks) -> float:
    from callback_overhead import Timer

    timer = Timer()
    model.fit(ds, epochs=1, steps_per_epoch=WARMUP + steps, verbose=0, shuffle=False,
              callbacks=[timer, *callbacks])
    return steps / (timer.end - timer.start)


class _NextOnly:
    """A session that only takes the batch: fit's path through _FitTap, nothing observed."""

    def take(self, source, real_next):
        return real_next()

    def cut(self, source) -> None:
        pass

    def refuse(self, message: str, hint: str) -> None:
        raise RuntimeError(message)


def measure_fit(workload, rounds: int, seconds: float) -> dict:
    from pipediag.run.fit import _FitTap

    _, keras = _tf()
    name, model, ds = workload()
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    first = run_fit(model, ds, 30, [])  # compile once, for all arms
    steps = max(50, int(seconds * first))
    rates: dict[str, list[float]] = {"without": [], "path": [], "with": []}
    checks = []
    for r in range(rounds):
        for arm in arm_order(("without", "path", "with"), r):
            if arm == "without":
                rates[arm].append(run_fit(model, ds, steps, []))
            elif arm == "path":
                rates[arm].append(run_fit(model, ds, steps, [_FitTap(_NextOnly(), None)]))
            else:
                observed = Observed()
                with observed:
                    rates[arm].append(run_fit(model, ds, steps, []))
                checks.append(observed)
    result = finish(f"fit-{name}", {}, steps, rates, checks)
    result["ratio_with_over_path"] = summarize(rates, "with", "path")
    result["ratio_path_over_without"] = summarize(rates, "path", "without")
    return result


def finish(name: str, workload: dict, steps: int, rates: dict, checks: list[Observed],
           goal_ms: float | None = None) -> dict:
    """The workload's record; its goal is set by `goal_ms` (a loop's calibration target) when
    given, else by the step time measured without the hooks."""
    bad = [c for c in checks if not c.still_observing or c.steps_seen < steps]
    if bad:
        raise RuntimeError(f"{name}: an observed arm left the observe phase or timed too few steps "
                           f"({[(c.session.phase, c.steps_seen) for c in bad]})")
    step_ms = 1000 / statistics.median(rates["without"])
    ratio = summarize(rates)
    return {"workload": name, **workload, "timed_steps_per_arm": steps, "rounds": len(rates["with"]),
            "step_ms_without_median": step_ms, "batches_per_sec": rates, "ratio_with_over_without": ratio,
            **verdict(step_ms if goal_ms is None else goal_ms, ratio["median"]),
            "sampler_core_share": sum(c.sampler_cpu_s for c in checks) / sum(c.wall_s for c in checks),
            "observed_steps_per_arm": [c.steps_seen for c in checks],
            "samples_per_arm": [len(c.log.samples) for c in checks]}


def summary_line(r: dict) -> str:
    ratio = r["ratio_with_over_without"]
    line = (f"{r['workload']}: step {r['step_ms_without_median']:.2f} ms; with/without median {ratio['median']:.4f} "
            f"(min {ratio['min']:.4f}, max {ratio['max']:.4f}, pooled {ratio['pooled']:.4f}); goal >= "
            f"{r['goal_ratio']:.2f}: {'met' if r['meets'] else 'MISSED'}; the sampler thread used "
            f"{100 * r['sampler_core_share']:.2f}% of a core")
    if "ratio_with_over_path" in r:
        wp, pw = r["ratio_with_over_path"], r["ratio_path_over_without"]
        line += (f"; with/path {wp['median']:.4f} ({wp['min']:.4f}-{wp['max']:.4f}), "
                 f"path/without {pw['median']:.4f} ({pw['min']:.4f}-{pw['max']:.4f})")
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=36, help="a multiple of 12 balances both arm sets")
    parser.add_argument("--seconds", type=float, default=0.5,
                        help="about how long each arm's timed steps take (short arms: the two sides of a "
                             "pair see the same machine)")
    parser.add_argument("--loop-ms", default="1,5,20", help="the custom loop's step sizes to calibrate")
    parser.add_argument("--no-fit", action="store_true")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"),
                        help="folder for the JSON ('' writes none)")
    args = parser.parse_args()
    import psutil
    from callback_overhead import cnn_workload, mlp_workload

    tf, keras = _tf()
    started = time.perf_counter()
    take = take_cost_us()
    print(f"observe path alone: {take['added_us_per_step']:.1f} us per step (a Python iterator, no step)", flush=True)
    results = []
    for target_ms in (float(x) for x in args.loop_ms.split(",") if x):
        results.append(measure_loop(target_ms, args.rounds, args.seconds))
        print(summary_line(results[-1]), flush=True)
    for workload in () if args.no_fit else (mlp_workload, cnn_workload):
        results.append(measure_fit(workload, args.rounds, args.seconds))
        print(summary_line(results[-1]), flush=True)
    now = dt.datetime.now(dt.timezone.utc)
    record = {
        "benchmark": "run_overhead",
        "date": now.isoformat(timespec="seconds"),
        "command": "python " + " ".join(["benchmarks/run_overhead.py", *sys.argv[1:]]),
        "wall_s": time.perf_counter() - started,
        "machine": {"platform": platform.platform(), "cpu_logical": psutil.cpu_count(),
                    "memory_bytes": psutil.virtual_memory().total, "python": platform.python_version(),
                    "tensorflow": tf.__version__, "keras": keras.__version__,
                    "gpu": [d.name for d in tf.config.list_physical_devices("GPU")] or None},
        "how": "alternating arms in one process; 'with' is pipediag run's observe phase (Session, Hooks, Sampler "
               "as run_script installs them, a stop rule that never ends it); 'path' is fit's one-batch-list path "
               "alone (run.fit._FitTap with a session that only calls next)",
        "take_cost": take,
        "results": results,
    }
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, f"run_overhead-{now:%Y-%m-%d}.json")
        with open(path, "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
