"""`InputMonitor`: a Keras callback that diagnoses the input pipeline during the user's real `fit`.

    from pipediag.keras import InputMonitor
    monitor = InputMonitor(html="fit.html")
    model.fit(dataset, epochs=3, callbacks=[monitor])
    monitor.diagnosis.verdict.bottleneck

No second run: it times the steps of this `fit`, samples CPU and GPU with pipediag's Sampler,
and at the end gives a Diagnosis with the pipeline mode only and a verdict in the usual
vocabulary (`verdict.pipeline_only`), printed, and written to JSON/HTML/CSV when asked.

How the input wait is measured. With the TensorFlow backend, Keras 3 fetches the batch *inside*
`model.train_function` (`iterator.get_next()` in the compiled function), so the gap between
`on_train_batch_end` and the next `on_train_batch_begin` holds no input wait at all — timing
those hooks cannot see it. Instead, at `on_train_begin` (after Keras built `train_function`),
the monitor wraps `train_function`: the wrapper takes the batch with `next(iterator)` — timed:
that is the wait — and hands it to Keras's own train function as a one-batch list, which Keras
runs through the same compiled per-batch step (`one_step_on_data`) it uses for any iterable
input. `fit_steps` says exactly what the rest of the step includes. Outside that setting
(the PyTorch backend, `steps_per_execution` > 1, tf-keras 2) the monitor does not touch `fit`; it
then says the wait could not be measured, and why.

On the JAX backend Keras' train function is `train_function(state, iterator)` and calls
`next(iterator)` itself (its tf.data adapter's `get_jax_iterator`: the batch converted to NumPy),
then the jitted step. The monitor takes that batch the same way, timed, and hands the step a
one-batch iterator. The jitted step is dispatched asynchronously, so the device may still run the
previous step while the next batch is fetched: on JAX the measured wait is the fetch, an upper
bound on the device's idle time (`pipediag diagnose --model` with KERAS_BACKEND=jax measures the
part the device did not hide). On PyTorch, fit takes each batch in its own Python loop before
`on_train_batch_begin`, outside anything a callback can wrap: the monitor says so.

The monitor defines no batch-end hook, so Keras keeps dispatching batch-end callbacks
asynchronously where it would have (a batch-end hook without `async_safe` makes Keras
synchronise with the device after every step).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pipediag.analysis.modes import summarize, within_limit
from pipediag.analysis.waiting import cpu_during
from pipediag.backends.tf import keras, tf
from pipediag.callbacks.fit_steps import FitSteps
from pipediag.records.kinds import COMPLETE, INTERRUPTED
from pipediag.records.step import StepInfo
from pipediag.results.diagnose import Diagnosis
from pipediag.samples.gpu import GpuReader
from pipediag.samples.sampler import DEFAULT_HZ, Sampler


def unsupported_reason(model: Any) -> str | None:
    """Why the input wait cannot be measured in this model's fit, or None when it can."""
    backend = keras.backend.backend() if hasattr(keras, "backend") else "unknown"
    if backend == "torch":
        return ("on Keras' PyTorch backend fit takes each batch from its DataLoader in its own loop, before "
                "on_train_batch_begin and outside train_function, so a callback cannot time the wait without "
                "changing fit; diagnose the model with `KERAS_BACKEND=torch pipediag diagnose ... --model ...`")
    if not keras.__version__.startswith("3.") or backend not in ("tensorflow", "jax"):
        return (f"InputMonitor measures the input wait with Keras 3 on the TensorFlow or JAX backend; this is Keras "
                f"{keras.__version__} on {backend}")
    spe = getattr(model, "steps_per_execution", 1)
    if spe != 1:
        return (f"steps_per_execution={spe}: Keras fetches {spe} batches inside one compiled call, so the wait for "
                "each cannot be timed; compile with steps_per_execution=1 while diagnosing")
    if not callable(getattr(model, "train_function", None)):
        return "the model has no train_function to time (Keras did not build one)"
    return None


def _unwrapped(function):
    """Keras's own train function, also when a fit that raised left a monitor's wrapper in place."""
    while getattr(function, "__func__", None) is InputMonitor._timed_train_function:
        function = function.__self__._original
    return function


class InputMonitor(keras.callbacks.Callback):
    """Measure input wait vs step time inside `model.fit`, sample CPU/GPU, and give a verdict.

    json, html, samples_csv: files to write at the end of fit (as `pipediag diagnose` does).
    log_dir: also write per-epoch TensorBoard scalars under `log_dir/pipediag`: pipediag/input_wait_frac,
      pipediag/batches_per_sec, pipediag/cpu_util_pct and, with GPU readings, pipediag/gpu_util_pct.
    verbose: 1 prints the report when fit ends, 0 prints nothing (`monitor.diagnosis` has it).
    warmup_steps: the first steps (tracing and compiling) left out of the timings.
    """

    def __init__(
        self,
        *,
        json: str | None = None,
        html: str | None = None,
        samples_csv: str | None = None,
        log_dir: str | None = None,
        verbose: int = 1,
        warmup_steps: int = 5,
        sample_hz: float = DEFAULT_HZ,
        nvml_lib: Any | None = None,
        clock_ns: Callable[[], int] = time.monotonic_ns,
    ):
        super().__init__()
        self.outputs = {"json": json, "html": html, "samples_csv": samples_csv}
        self.log_dir = log_dir
        self.verbose = verbose
        self.warmup_steps = warmup_steps
        self.sample_hz = sample_hz
        self.nvml_lib = nvml_lib
        self.clock_ns = clock_ns
        self.diagnosis: Diagnosis | None = None
        self.written: list[str] = []
        self._reset()

    def _reset(self) -> None:
        self._active = False
        self._steps = FitSteps(warmup_steps=self.warmup_steps)
        self._sampler: Sampler | None = None
        self._environment = None
        self._original = None
        self._unsupported: str | None = None
        self._started_ns = 0
        self._writer = None
        self._epochs_seen = 0

    # Keras hooks ---------------------------------------------------------------------------

    def on_train_begin(self, logs=None) -> None:
        from pipediag.samples.environment import collect

        keras_train_function = _unwrapped(getattr(self.model, "train_function", None))
        if self._active:  # the last fit raised and result() was never asked for: clean up quietly
            self._sampler.stop()
        self._reset()
        self.diagnosis = None
        self._started_ns = self.clock_ns()
        self._environment = collect(nvml_lib=self.nvml_lib)
        self._unsupported = unsupported_reason(self.model)
        if self.log_dir:
            self._writer = tf.summary.create_file_writer(os.path.join(self.log_dir, "pipediag"))
        self._sampler = Sampler(gpu_reader=GpuReader(self.nvml_lib), hz=self.sample_hz, clock_ns=self.clock_ns)
        self._sampler.start()
        self._active = True
        if self._unsupported is None:
            self._original = keras_train_function
            self.model.train_function = self._timed_train_function

    def on_epoch_begin(self, epoch, logs=None) -> None:
        self._steps.current_epoch = epoch

    def on_test_begin(self, logs=None) -> None:
        if self._active:  # validation inside fit: the epoch's training steps are over
            self._steps.cut(self.clock_ns())

    def on_epoch_end(self, epoch, logs=None) -> None:
        if not self._active:
            return
        self._steps.cut(self.clock_ns())
        self._epochs_seen += 1
        if self._writer is not None:
            self._write_scalars(epoch)

    def on_train_end(self, logs=None) -> None:
        if self._active:
            self._finish("complete")

    # The timed train function ----------------------------------------------------------------

    def _timed_train_function(self, *args):
        # TensorFlow: train_function(iterator); JAX: train_function(state, iterator).
        original, iterator = self._original, args[-1]
        if not self._active:  # finished early (result() during fit): step aside
            return original(*args)
        clock = self.clock_ns
        try:
            self._steps.fetch_started(clock())
            try:
                data = next(iterator)
            except (StopIteration, tf.errors.OutOfRangeError):
                self._steps.fetch_failed(clock())
                raise StopIteration from None
            self._steps.fetched(clock())
            if len(args) == 2:  # JAX: the step function calls next() on what it is given
                return original(args[0], iter([data]))
            return original([data])
        except KeyboardInterrupt:
            self._finish(INTERRUPTED)  # Ctrl-C: keep what was measured; fit stops as usual
            raise

    # Results ---------------------------------------------------------------------------------

    def result(self) -> Diagnosis:
        """The diagnosis: after fit, the final one; during (or after a fit that raised), what was
        measured so far, marked interrupted — this also stops the sampler and unwraps fit."""
        if self.diagnosis is None:
            self._finish(INTERRUPTED)
        return self.diagnosis

    def _finish(self, status: str) -> None:
        if not self._active:
            return
        self._active = False
        self._steps.cut(self.clock_ns())
        if self._original is not None and self.model is not None:
            self.model.train_function = self._original
        log = self._sampler.stop()
        self.diagnosis = self._build(status, log)
        if self._writer is not None:
            self._writer.close()
        self._write_outputs()
        if self.verbose:
            from rich.console import Console

            from pipediag.report.terminal.diagnose import render_diagnosis

            Console().print(render_diagnosis(self.diagnosis))

    def _build(self, status: str, log) -> Diagnosis:
        from pipediag.fixes.recommend import recommend
        from pipediag.verdict.container import with_container
        from pipediag.verdict.pipeline_only import decide_pipeline_only

        steps = self._steps
        run = None if self._unsupported else steps.mode_run("fit_ended" if status == COMPLETE else INTERRUPTED)
        runs, modes = {}, {}
        if run is not None:
            windows = steps.windows(steps.warmup_steps)
            inside = tuple(s for s in log.samples if any(lo <= s.time_ns <= hi for lo, hi in windows))
            summary = summarize(run, replace(log, samples=inside))
            waiting = cpu_during(steps.wait_intervals(steps.warmup_steps), inside, int(log.interval_s * 1e9))
            summary = replace(summary, cpu_while_waiting=within_limit(waiting, log))
            runs, modes = {"pipeline": run}, {"pipeline": summary}
        verdict = with_container(decide_pipeline_only(modes.get("pipeline"), self._unsupported), modes,
                                 log.container)
        if status != "complete":
            verdict = replace(verdict, confidence="low",
                              evidence=verdict.evidence + ("fit was interrupted: this verdict uses the steps before",))
        env = self._environment
        recommendation = recommend(verdict, modes, [], gpu_present=bool(env.gpus),
                                   tf_gpu_without_memory_growth=env.tf_gpu_without_memory_growth,
                                   container=log.container)
        notes = ["for fixes measured on your pipeline and naming its stages, run `pipediag diagnose` on the function "
                 "that builds your dataset, with --model for the function that builds your model"]
        if self._unsupported:
            notes.append(self._unsupported)
        elif run is None:
            notes.append(f"fit ended after {steps.steps} step(s), within the {steps.warmup_steps} warm-up steps")
        model = self.model
        params = model.count_params() if getattr(model, "built", False) else None
        return Diagnosis(
            status=status,
            target=f"model.fit of Keras model '{model.name}'",
            step=StepInfo(kind="keras_fit", description=(
                f"your own model.fit of '{model.name}'" + (f" ({params:,} parameters)" if params else "")
                + ", timed by pipediag.keras.InputMonitor")),
            environment=env,
            element=None,
            cardinality=None,
            first_batch_ms=(steps.t1[0] - steps.t0[0]) / 1e6 if steps.t1 else None,
            stages=(),
            runs=runs,
            modes=modes,
            tuning=(),
            tuned_check=None,
            cache_fill_ms=None,
            verdict=verdict,
            fixes=recommendation.fixes,
            tried=(),
            samples=log,
            settings={
                "source": "keras.InputMonitor",
                "epochs": self._epochs_seen,
                "warmup_steps": steps.warmup_steps,
                "steps_per_execution": getattr(model, "steps_per_execution", None),
                "sample_interval_s": log.interval_s,
            },
            notes=tuple(notes),
            elapsed_s=(self.clock_ns() - self._started_ns) / 1e9,
        )

    def _write_outputs(self) -> None:
        from pipediag.records.files import write_json, write_text

        paths = self.outputs
        if paths["json"]:
            write_json(self.diagnosis.to_dict(), paths["json"])
            self.written.append(paths["json"])
        if paths["html"]:
            from pipediag.report.html.diagnose import render_html

            write_text(render_html(self.diagnosis), paths["html"])
            self.written.append(paths["html"])
        if paths["samples_csv"]:
            from pipediag.report.samples_csv import format_samples_csv

            write_text(format_samples_csv(self.diagnosis), paths["samples_csv"])
            self.written.append(paths["samples_csv"])

    def _write_scalars(self, epoch: int) -> None:
        numbers = self._steps.epoch_numbers(epoch)
        if numbers is None:
            return
        n, wait_ns, total_ns, (lo, hi) = numbers
        samples = [s for s in self._sampler.log().samples if lo <= s.time_ns <= hi]
        values = {
            "pipediag/input_wait_frac": wait_ns / total_ns if total_ns else None,
            "pipediag/batches_per_sec": n / (total_ns / 1e9) if total_ns else None,
            "pipediag/cpu_util_pct": sum(s.cpu.total_pct for s in samples) / len(samples) if samples else None,
        }
        gpu = [g.util_pct for s in samples for g in s.gpus[:1] if g.util_pct is not None]
        values["pipediag/gpu_util_pct"] = sum(gpu) / len(gpu) if gpu else None  # absent, never 0, without a GPU
        # tf.summary.scalar lives in the tensorboard package; this is what it writes, with TF alone.
        metadata = tf.compat.v1.SummaryMetadata()
        metadata.plugin_data.plugin_name = "scalars"
        with self._writer.as_default(step=epoch):
            for name, value in values.items():
                if value is not None:
                    tf.summary.write(name, tf.constant(value, tf.float32), metadata=metadata)
        self._writer.flush()
