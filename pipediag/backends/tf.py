"""TensorFlow, imported once. Every pipediag module that needs TensorFlow gets it from here.

Importing this module imports TensorFlow; a missing installation becomes a UsageError with the
install command as its hint.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import re
import sys
import tempfile

from pipediag import backends
from pipediag.errors import UsageError

# TensorFlow's C++ INFO/WARNING lines would drown the report; errors still show.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
_LOG_LINE = re.compile(r"^([IWEF])\d{4} ")
_HIDDEN_LEVELS = {"0": "", "1": "I", "2": "IW", "3": "IWE"}


def _replay(text: str, hidden: str) -> None:
    """Write back what TensorFlow printed while importing, minus the levels the user hid.

    TensorFlow 2.21 logs through absl before its logging is set up, ignoring TF_CPP_MIN_LOG_LEVEL
    (the oneDNN and CPU-feature INFO lines, an absl banner). Continuation lines follow their entry.
    """
    keep = True
    for line in text.splitlines():
        match = _LOG_LINE.match(line)
        if match:
            keep = match.group(1) not in hidden
        elif line.startswith("WARNING: All log messages before absl::InitializeLog()"):
            keep = "W" not in hidden
            if not keep:
                continue
        if keep:
            sys.stderr.write(line + "\n")


@contextlib.contextmanager
def _collections_paused():
    """Python's cyclic garbage collector paused for the block, then left as it was before. Importing
    TensorFlow creates hundreds of thousands of objects, and the collections they set off on the way cost
    about half a second: importing this module took 3.61-3.68 s before, 3.13-3.18 s with the
    collector paused (three imports each, alternated, the 2-core development machine, 2026-12-04).
    Nothing is lost: what is garbage by then is collected at the next collection after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _import_tensorflow():
    hidden = _HIDDEN_LEVELS.get(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0"), "IW")
    if not hidden:
        import tensorflow

        return tensorflow
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow

            tensorflow.config.list_physical_devices()  # device setup logs its lines now, not mid-report
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            _replay(captured.read().decode(errors="replace"), hidden)
    return tensorflow


with _collections_paused():
    try:
        tf = _import_tensorflow()
    except ImportError as error:  # pragma: no cover - exercised only without TensorFlow
        raise UsageError(
            f"TensorFlow is not installed ({error})",
            "pip install 'pipediag[cpu]' (or 'pipediag[gpu]' for the CUDA build)",
        ) from error

    # Keras 3 is a separate package; tf.keras points at it (or at tf-keras under TF_USE_LEGACY_KERAS).
    keras = tf.keras

if backends.freeze_imported_objects:
    gc.freeze()

__all__ = ["tf", "keras", "keras_data_adapter", "version", "is_cuda_build", "visible_gpus", "build_info", "xla_jit",
           "eager_gradients_counted"]


def version() -> str:
    return tf.__version__


def is_cuda_build() -> bool:
    return bool(tf.test.is_built_with_cuda())


def build_info() -> dict:
    """`tf.sysconfig.get_build_info()`: is_cuda_build, and on a CUDA build cuda_version,
    cudnn_version and cuda_compute_capabilities (the architectures it carries kernels for)."""
    try:
        return dict(tf.sysconfig.get_build_info())
    except (AttributeError, ImportError):  # very old or stripped builds
        return {}


def xla_jit() -> str:
    """`tf.config.optimizer.get_jit()` in words: "off", "autoclustering" or "on" (older builds
    answer with a bool)."""
    jit = tf.config.optimizer.get_jit()
    if isinstance(jit, bool):
        return "on" if jit else "off"
    return str(jit) or "off"


def visible_gpus() -> list[str]:
    return [d.name for d in tf.config.list_physical_devices("GPU")]


class EagerGradients:
    """How many times `tf.GradientTape.gradient` ran eagerly (outside any tf.function's tracing)."""

    def __init__(self) -> None:
        self.calls = 0


@contextlib.contextmanager
def eager_gradients_counted():
    """Counts, inside the block, the `tf.GradientTape.gradient` calls made eagerly, in any thread.

    A training step compiled with tf.function (Keras' own train function included) reads its tape
    only while it is traced, in graph mode, and never again; an eager step (a custom loop without
    tf.function, `run_eagerly=True`, `tf.config.run_functions_eagerly(True)`) reads it on every
    call, op by op from Python. A step of another framework never calls it. The method is wrapped
    on the public class for the block and put back after; the wrapper costs a Python call per
    gradient, nothing per step otherwise."""
    counted = EagerGradients()
    tape = tf.GradientTape
    original = tape.__dict__["gradient"]

    @functools.wraps(original)
    def gradient(self, *args, **kwargs):
        if tf.executing_eagerly():
            counted.calls += 1
        return original(self, *args, **kwargs)

    tape.gradient = gradient
    try:
        yield counted
    finally:
        tape.gradient = original


def keras_data_adapter(dataset):
    """Keras 3's own adapter for a tf.data.Dataset: what `fit` iterates on every backend."""
    from keras.src.trainers.data_adapters.tf_dataset_adapter import TFDatasetAdapter

    return TFDatasetAdapter(dataset)
