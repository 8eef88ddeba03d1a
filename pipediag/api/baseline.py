"""`run_baseline()`: the machine's profile — a reference model on synthetic data at several batch sizes.

A platform team evaluating a node or an image runs a known model and keeps the numbers: for each
batch size, throughput (samples/s), step time p50/p90, peak device memory, GPU busy / SM activity
/ power, and where memory runs out. Two profiles are then compared (`compare_profiles`,
`pipediag compare --baseline A.json B.json`).

The model: Keras ResNet-50 (weights=None, 224x224x3, 1000 classes) where the Keras backend has a
GPU; otherwise the CIFAR ResNet-20 (He et al. 2016, 32x32x3, 10 classes, 0.27 M parameters): a
standard model whose training step a CPU runs in tens of milliseconds, so a CPU-only machine
gets a profile in about a minute (ResNet-50 needs seconds per step there). `model=` picks one
explicitly, so two machines can be profiled on the same model.

Each batch size is one mode of the runner (modes/runner.py) on a constant batch already on the
device: the first step (tracing and compiling) and warm-up steps apart, then timed steps until
the median is stable or the size's window ends. The samplers run throughout; each size's window
is summarised like a diagnosis's mode (analysis/modes.py). Sizes run from small to large; the
first that runs out of memory ends the list (memory grows with the batch). A time budget caps
the whole run: each size's window is fitted to what is left, and sizes that no longer fit are
skipped and said so. `precision`: the Keras dtype policy the model is built and trained under
(float32, mixed_float16, mixed_bfloat16; steps/precision.py), the caller's policy restored after
the build. Library code: returns a `BaselineProfile`, prints nothing.
"""
from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pipediag.analysis.sweep import oom_edge
from pipediag.errors import UsageError
from pipediag.records.kinds import COMPLETE, INTERRUPTED, OK, OUT_OF_MEMORY, SKIPPED, Status
from pipediag.records.run import ErrorInfo, StopRule
from pipediag.results.baseline import BaselinePoint, BaselineProfile

MIN_WINDOW_S = 1.0  # a size's timed window is never shorter: below it the interval means little


@dataclass(frozen=True)
class ModelSpec:
    name: str
    input_shape: tuple[int, int, int]
    classes: int
    description: str


MODELS = {
    "resnet50": ModelSpec("resnet50", (224, 224, 3), 1000,
                          "Keras ResNet-50 (keras.applications, weights=None), 224x224x3, 1000 classes"),
    "mobilenetv3small": ModelSpec("mobilenetv3small", (224, 224, 3), 1000,
                                  "Keras MobileNetV3Small (keras.applications, weights=None), 224x224x3, 1000 classes"),
    "resnet20": ModelSpec("resnet20", (32, 32, 3), 10,
                          "ResNet-20 for CIFAR (He et al. 2016: 3 stages of 3 basic blocks, 16/32/64 filters), "
                          "32x32x3, 10 classes"),
}
GPU_DEFAULTS = {"model": "resnet50", "batch_sizes": (64, 128, 256), "budget_s": 170.0, "window_s": 6.0}
CPU_DEFAULTS = {"model": "resnet20", "batch_sizes": (16, 32, 64), "budget_s": 60.0, "window_s": 6.0}


def keras_device(backend: str) -> str:
    """Where the Keras backend runs its ops: "gpu" if it has one, else "cpu"."""
    if backend == "jax":
        import jax

        return "gpu" if any(d.platform in ("gpu", "cuda", "rocm") for d in jax.devices()) else "cpu"
    if backend == "torch":
        torch = sys.modules.get("torch")
        return "gpu" if torch is not None and torch.cuda.is_available() else "cpu"
    from pipediag.backends.tf import tf

    return "gpu" if tf.config.list_logical_devices("GPU") else "cpu"


def build_model(spec: ModelSpec) -> Any:
    """The reference model, compiled: SGD with momentum 0.9 and sparse cross-entropy, as these
    models are trained."""
    from pipediag.backends.tf import keras

    if spec.name == "resnet50":
        model = keras.applications.ResNet50(weights=None, input_shape=spec.input_shape, classes=spec.classes)
    elif spec.name == "mobilenetv3small":
        model = keras.applications.MobileNetV3Small(weights=None, input_shape=spec.input_shape, classes=spec.classes)
    else:
        model = _resnet20(keras, spec.input_shape, spec.classes)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01, momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy())
    return model


def _resnet20(keras: Any, input_shape: tuple[int, int, int], classes: int) -> Any:
    layers = keras.layers
    inputs = keras.Input(input_shape)
    x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(16, 3, padding="same", use_bias=False)(inputs)))
    for stage, filters in enumerate((16, 32, 64)):
        for block in range(3):
            stride = 2 if stage > 0 and block == 0 else 1
            y = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
            y = layers.ReLU()(layers.BatchNormalization()(y))
            y = layers.BatchNormalization()(layers.Conv2D(filters, 3, padding="same", use_bias=False)(y))
            if stride != 1 or x.shape[-1] != filters:
                x = layers.BatchNormalization()(layers.Conv2D(filters, 1, strides=stride, use_bias=False)(x))
            x = layers.ReLU()(layers.Add()([x, y]))
    outputs = layers.Dense(classes, activation="softmax")(layers.GlobalAveragePooling2D()(x))
    return keras.Model(inputs, outputs, name="resnet20")


def synthetic_batch(spec: ModelSpec, batch_size: int, backend: str, device: str, seed: int = 0) -> tuple[Any, Any]:
    """Random images and labels, placed on the backend's device once: the profile measures the
    step, not a host-to-device copy per step."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.random((batch_size, *spec.input_shape), dtype=np.float32)
    y = rng.integers(0, spec.classes, size=(batch_size,), dtype=np.int32)
    if backend == "jax":
        import jax

        return jax.device_put(x), jax.device_put(y)
    if backend == "torch":
        import torch

        where = "cuda" if device == "gpu" else "cpu"
        return torch.from_numpy(x).to(where), torch.from_numpy(y).long().to(where)
    from pipediag.backends.tf import tf

    with tf.device("/GPU:0" if device == "gpu" else "/CPU:0"):
        return tf.identity(tf.constant(x)), tf.identity(tf.constant(y))


def window_for(budget_s: float, elapsed_s: float, sizes_left: int, overhead_s: float, cap_s: float) -> float | None:
    """The timed window of the next batch size: an even share of the budget left, less the
    set-up the last size took (compiling, warm-up), at most `cap_s`; None when even the shortest
    window no longer fits (the size is skipped)."""
    remaining = budget_s - elapsed_s
    if remaining < overhead_s + MIN_WINDOW_S:
        return None
    share = remaining / max(1, sizes_left) - overhead_s
    return max(MIN_WINDOW_S, min(cap_s, share))


def run_baseline(
    *,
    batch_sizes: Sequence[int] | None = None,
    model: str | None = None,
    budget_s: float | None = None,
    window_s: float | None = None,
    find_oom_edge: bool = False,
    memory_limit: Any | None = None,
    precision: str = "float32",
    nvml_lib: Any | None = None,
    progress: Any | None = None,
    clock_ns: Callable[[], int] = time.monotonic_ns,
) -> BaselineProfile:
    """Profile this machine. Defaults depend on where the Keras backend runs (GPU_DEFAULTS,
    CPU_DEFAULTS). `find_oom_edge`: after the listed sizes, keep doubling the batch until one runs
    out of memory or the budget is spent. `memory_limit` (backends.memory_limit.MemoryLimit): a
    smaller card simulated; the caller applies it before the Keras backend starts (the CLI does),
    PyTorch's part is applied here, once Keras has imported it. `precision`: the Keras dtype
    policy of the model (steps.precision.PRECISIONS); on a CPU a mixed one runs, with a note."""
    from pipediag.samples.environment import collect
    from pipediag.samples.gpu import GpuReader
    from pipediag.samples.sampler import Sampler
    from pipediag.steps import precision as precisions
    from pipediag.steps.keras_step import keras_backend

    precisions.check(precision)

    started = clock_ns()
    backend = keras_backend()
    device = keras_device(backend)
    defaults = GPU_DEFAULTS if device == "gpu" else CPU_DEFAULTS
    spec, reason = _model_choice(model, defaults, backend, device)
    sizes = tuple(sorted(set(batch_sizes or defaults["batch_sizes"])))
    budget = budget_s if budget_s is not None else defaults["budget_s"]
    cap = window_s if window_s is not None else defaults["window_s"]
    notes: list[str] = [n for n in (precisions.cpu_note(precision, backend, device),) if n]
    points: list[BaselinePoint] = []
    status: Status = COMPLETE

    def elapsed_s() -> float:
        return (clock_ns() - started) / 1e9

    sampler = Sampler(gpu_reader=GpuReader(nvml_lib), clock_ns=clock_ns)
    if progress is not None:
        progress.phase("reading the environment")
    environment = collect(nvml_lib=nvml_lib)
    sampler.start()
    profiler = _Profiler(spec, backend, device, budget, sampler, progress, clock_ns, precision)
    try:
        profiler.build(memory_limit)
        status = measure_sizes(sizes, profiler.measure, points, notes, budget_s=budget, cap_s=cap,
                               find_oom_edge=find_oom_edge, elapsed_s=elapsed_s)
    except KeyboardInterrupt:
        status = INTERRUPTED
        notes.append("interrupted: the batch sizes measured before are kept")
    finally:
        log = sampler.stop()
    if find_oom_edge and not any(p.status == OUT_OF_MEMORY for p in points):
        notes.append("--find-oom-edge: the time budget ended the doubling before memory ran out")
    ran = [p for p in points if p.status == OK]
    peaks = {p.batch_size: p.peak_memory.bytes for p in ran if p.peak_memory is not None}
    edge = oom_edge([p.batch_size for p in ran], [p.batch_size for p in points if p.status == OUT_OF_MEMORY], peaks,
                    memory_limit.text if memory_limit is not None else "")
    if memory_limit is not None:
        notes.extend(f"memory limit applied: {line}" for line in memory_limit.applied)
        notes.extend(f"the memory limit did not apply to {line}" for line in memory_limit.not_applied)
    if log.gpu_unavailable_reason:
        notes.append(f"no GPU readings: {log.gpu_unavailable_reason}")
    keras_model = profiler.keras_model
    return BaselineProfile(
        status=status, model=spec.name, model_description=spec.description, model_reason=reason, backend=backend,
        device=device, parameters=None if keras_model is None else int(keras_model.count_params()),
        environment=environment, points=tuple(points), oom_edge=edge,
        settings={"batch_sizes": list(sizes), "budget_s": budget, "window_s": cap, "find_oom_edge": find_oom_edge,
                  "warmup_steps": 2, "min_steps": 10,
                  "gpu_memory_limit_bytes": None if memory_limit is None else memory_limit.limit_bytes,
                  "input_shape": list(spec.input_shape), "classes": spec.classes},
        notes=tuple(notes), elapsed_s=elapsed_s(), precision=precision,
    )


def _model_choice(model: str | None, defaults: dict, backend: str, device: str) -> tuple[ModelSpec, str]:
    """The model to profile (--model, else the device's default) and why it was chosen."""
    name = model or defaults["model"]
    if name not in MODELS:
        raise UsageError(f"unknown model {name!r}", f"use one of {', '.join(MODELS)}")
    if model:
        reason = f"chosen with --model {model}"
    elif device == "gpu":
        reason = f"the Keras {backend} backend has a GPU: the standard ResNet-50"
    else:
        reason = (f"the Keras {backend} backend has no GPU: ResNet-20 (CIFAR), whose step a CPU runs in tens of "
                  "milliseconds (ResNet-50 takes seconds per step there); profile a GPU with --model resnet50")
    return MODELS[name], reason


class _Profiler:
    """The reference model built once, and one batch size measured at a time on synthetic batches."""

    def __init__(self, spec: ModelSpec, backend: str, device: str, budget_s: float, sampler, progress, clock_ns,
                 precision: str = "float32"):
        self.spec, self.backend, self.device, self.budget_s = spec, backend, device, budget_s
        self.sampler, self.progress, self.clock_ns, self.precision = sampler, progress, clock_ns, precision
        self.keras_model = None

    def build(self, memory_limit) -> None:
        from pipediag.steps.device_memory import DeviceMemory
        from pipediag.steps.precision import built_under

        if self.progress is not None:
            self.progress.phase(f"building {self.spec.name} ({self.precision}) on the Keras {self.backend} backend "
                                f"({self.device})")
        self.keras_model = built_under(self.precision, lambda: build_model(self.spec))
        if memory_limit is not None:
            from pipediag.backends.memory_limit import after_user_code

            after_user_code(memory_limit)
        backend = self.backend
        self.memory = DeviceMemory(lambda: backend)

    def measure(self, b: int, window: float) -> tuple[BaselinePoint, float]:
        """Batch size `b` timed for up to `window` seconds; the point and its set-up seconds."""
        from pipediag.analysis.modes import summarize
        from pipediag.modes.runner import run_mode
        from pipediag.oom import is_out_of_memory
        from pipediag.steps.make import make_step

        progress, clock_ns = self.progress, self.clock_ns
        if progress is not None:
            progress.phase(f"batch size {b}")
        size_start = clock_ns()
        try:
            batch = synthetic_batch(self.spec, b, self.backend, self.device)
        except Exception as error:  # noqa: BLE001 - only out-of-memory is expected here
            if not is_out_of_memory(error):
                raise
            return BaselinePoint(b, OUT_OF_MEMORY, error=ErrorInfo.from_exception(error),
                                 note="the synthetic batch itself did not fit"), 0.0
        step = make_step(self.keras_model, None, self.spec.name, "tf", batch)
        rule = StopRule(max_seconds=window, min_seconds=min(2.0, window), min_steps=10, warmup_steps=2,
                        warmup_max_seconds=max(30.0, self.budget_s))
        self.memory.start()
        run = run_mode(f"batch {b}", lambda: batch, step.run, rule, clock_ns=clock_ns,  # noqa: F821 (closure: `batch` is deleted after the mode, once no step reads it)
                       progress=None if progress is None else progress.mode, first_step_is_compile=True)
        run = replace(run, device_memory=self.memory.stop())
        del batch
        gc.collect()
        return _point(b, run, summarize(run, self.sampler.log()), window), (run.start_ns - size_start) / 1e9


def measure_sizes(sizes: Sequence[int], measure: Callable[[int, float], tuple[BaselinePoint, float]],
                  points: list[BaselinePoint], notes: list[str], *, budget_s: float, cap_s: float,
                  find_oom_edge: bool, elapsed_s: Callable[[], float]) -> Status:
    """Run `measure(batch_size, window_s) -> (point, set-up seconds)` for each size, small to large,
    within the budget (`window_for`); after an out-of-memory size the larger ones are skipped;
    `find_oom_edge` doubles the last size until one runs out of memory or the budget is spent.
    Appends to `points` and `notes` (so an interruption keeps what was measured); returns the
    status, "complete" or "interrupted"."""
    queue = list(sizes)
    overhead_s = 0.0
    oom_at: int | None = None
    while queue:
        b = queue.pop(0)
        if oom_at is not None:
            points.append(BaselinePoint(b, SKIPPED, note=f"skipped: {oom_at} already ran out of memory"))
            continue
        window = window_for(budget_s, elapsed_s(), len(queue) + 1, overhead_s, cap_s)
        if window is None:
            points.append(BaselinePoint(b, SKIPPED, note=f"skipped: the time budget ({budget_s:g} s) was spent"))
            continue
        point, overhead_s = measure(b, window)
        points.append(point)
        if point.status == INTERRUPTED:
            notes.append(f"interrupted at batch size {b}: the profile stops there")
            points.extend(BaselinePoint(s, SKIPPED, note="not run: interrupted") for s in queue)
            return INTERRUPTED
        if point.status == OUT_OF_MEMORY:
            oom_at = b
        elif find_oom_edge and not queue:
            queue.append(2 * b)  # doubling until memory runs out (or the budget does)
    return COMPLETE


def _point(batch_size: int, run: Any, summary: Any, window: float) -> BaselinePoint:
    status = {OUT_OF_MEMORY: OUT_OF_MEMORY, INTERRUPTED: INTERRUPTED}.get(run.stop_reason, OK)
    if status == OK and not run.steps:  # the window ended before a timed step
        status = SKIPPED
    rate_ci = summary.batches_per_sec_ci
    gpm = summary.gpu.gpm if summary.gpu is not None else None
    return BaselinePoint(
        batch_size=batch_size,
        status=status,
        samples_per_sec=None if summary.batches_per_sec is None else summary.batches_per_sec * batch_size,
        samples_per_sec_ci=None if rate_ci is None else (rate_ci[0] * batch_size, rate_ci[1] * batch_size),
        step_ms_p50=summary.step_ms_median,
        step_ms_p50_ci=summary.step_ms_median_ci,
        step_ms_p90=summary.step_ms_p90,
        step_ns=run.step_ns,
        first_step_ms=summary.first_step_ms,
        warmup_s=run.warmup_ns / 1e9,
        window_s=window,
        stop_reason=run.stop_reason,
        peak_memory=summary.peak_memory,
        peak_memory_reason=summary.peak_memory_reason,
        rss_max_bytes=summary.rss_max_bytes,
        gpu_util_pct=summary.gpu_util_pct,
        gpu_util_reason=summary.gpu_util_reason,
        gpm_sm_active_pct=None if gpm is None else gpm.sm_active_pct,
        power_w_mean=None if summary.gpu is None else summary.gpu.power_w_mean,
        error=run.error,
        note="; ".join(run.notes) or None,
    )
