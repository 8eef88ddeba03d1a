"""A real Keras training step for `--model`: forward, loss, gradients and optimizer update.

`train_on_batch` runs the model's own `train_step` through the same compiled function `fit`
uses (`make_train_function`: tf.function, XLA when the model was compiled with jit_compile, a
jitted JAX function, or the PyTorch step), and returns its logs as NumPy values, so the step has
finished when it returns, on every backend (Keras turns the logs into NumPy, which waits for the
device).

Batches reach the step as Keras' own `fit` hands them over from a `tf.data.Dataset`
(`keras.src.trainers.data_adapters.TFDatasetAdapter`): TensorFlow tensors on the TensorFlow
backend, NumPy arrays on JAX (`get_jax_iterator`), PyTorch tensors on PyTorch
(`get_torch_dataloader`). Handing TensorFlow tensors to a JAX model fails at its first step
("Cannot interpret 'tf.float32' as a data type"), and the conversion is part of what `fit`
costs per batch, so the feed does it (modes/feeds.py), not the step.
"""

from __future__ import annotations

from typing import Any

from pipediag.backends.tf import keras
from pipediag.errors import UsageError
from pipediag.records.step import StepInfo
from pipediag.steps.step import Observed, Step

# Batch formats for a Keras model on another backend: converted by Keras' own tf.data adapter.
KERAS_FORMATS = {"jax": "keras-jax", "torch": "keras-torch"}

_SYNC = {
    "tensorflow": "train_on_batch returns its logs as NumPy values: the step's work is done when it returns",
    "jax": "train_on_batch returns its logs as NumPy values (np.asarray waits for the jitted JAX step)",
    "torch": "train_on_batch returns its logs as NumPy values (.cpu() waits for the PyTorch step)",
}


def keras_backend() -> str:
    """The backend Keras runs on: tensorflow, jax or torch (tf-keras 2 is always tensorflow)."""
    backend = getattr(keras, "backend", None)
    name = backend.backend() if backend is not None and hasattr(backend, "backend") else "tensorflow"
    return str(name)


def _is_compiled(model: Any) -> bool:
    compiled = getattr(model, "compiled", None)  # Keras 3
    if compiled is not None:
        return bool(compiled)
    return getattr(model, "optimizer", None) is not None  # tf-keras 2


_LABEL_KEYS = ("label", "labels", "target", "targets", "y")


def _loss_name(loss: Any) -> str:
    if isinstance(loss, str):
        return loss
    return getattr(loss, "__name__", None) or getattr(loss, "name", None) or type(loss).__name__


def check_batch(model: Any, batch: Any, label: str) -> None:
    """Refuse, before any timing, a batch the model's `train_on_batch` cannot take: Keras would
    fail deep inside its loss (`None values not supported`) or its unpacking, in frames that say
    nothing of the batch. `batch` is the dataset's first."""
    if isinstance(batch, (tuple, list)) and len(batch) > 3:
        raise UsageError(
            f"the batches are tuples of {len(batch)}, but Keras takes x, (x,), (x, y) or (x, y, sample_weight)",
            "pack the inputs into one tuple or dict in the pipeline, e.g. "
            "ds.map(lambda a, b, c, y: ((a, b, c), y))",
        )
    x, y, _ = keras.utils.unpack_x_y_sample_weight(batch)
    loss = getattr(model, "loss", None)
    if y is not None or loss is None:  # no compiled loss: the model may add its own (add_loss)
        return
    needs = f"the loss of {label} ({_loss_name(loss)}) needs labels y"
    if isinstance(batch, dict):
        key = next((k for k in _LABEL_KEYS if k in batch), None)
        keys = ", ".join(repr(k) for k in batch)
        example = key or "label"
        raise UsageError(
            f"the batches are dicts ({keys}); Keras passes a dict whole to the model as its inputs x, "
            f"so {needs} and gets none",
            f"map each batch to (features, label) in the pipeline, e.g. ds.map(lambda d: "
            f"({{k: v for k, v in d.items() if k != {example!r}}}, d[{example!r}]))",
        )
    raise UsageError(
        f"the batches hold inputs only ({'(x,)' if isinstance(batch, (tuple, list)) else 'x'}), but {needs}",
        "yield (x, y) batches from the pipeline, or compile the model with loss=None if it adds its own "
        "loss (add_loss)",
    )


def keras_step(model: Any, label: str, first_batch: Any = None) -> Step:
    if not isinstance(model, keras.Model):
        raise UsageError(
            f"--model {label} returned a {type(model).__name__}, not a Keras model",
            "return a compiled keras.Model, or use --step for a step function of your own",
        )
    if not _is_compiled(model):
        raise UsageError(
            f"the model from {label} is not compiled",
            "call model.compile(optimizer=..., loss=...) before returning it",
        )
    backend = keras_backend()
    if backend not in ("tensorflow", *KERAS_FORMATS):
        raise UsageError(
            f"the model from {label} runs on the Keras backend {backend!r}, which pipediag cannot feed",
            "run it with KERAS_BACKEND=tensorflow, jax or torch",
        )
    if first_batch is not None:
        check_batch(model, first_batch, label)

    strategy = None
    if backend == "tensorflow":
        from pipediag.steps.distributed import replica_devices, strategy_of

        strategy = strategy_of(model)

    def run(batch: Any) -> Any:
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
        return model.train_on_batch(x, y, sample_weight=sample_weight, return_dict=True)

    if strategy is not None:
        run = _distributed_run(model, strategy, first_batch)

    params = model.count_params() if model.built else None
    size = f", {params:,} parameters" if params else ""
    jit = getattr(model, "jit_compile", None)
    on = "" if backend == "tensorflow" else f" on the Keras {backend} backend"
    return Step(
        run=run,
        info=StepInfo(
            kind="keras",
            description=f"Keras model '{model.name}' from {label}{size}{on}: one train_on_batch per step"
            + (f" (jit_compile={jit})" if jit is not None else ""),
            batch_format=KERAS_FORMATS.get(backend, "tf"),
            framework=backend,
            devices=() if strategy is None else replica_devices(strategy),
            xla=jit if isinstance(jit, bool) else None,
        ),
        observed=lambda: Observed(backend, _SYNC[backend] if strategy is None else _SYNC_DISTRIBUTED,
                                  () if strategy is None else replica_devices(strategy)),
        strategy=strategy,
    )


_SYNC_DISTRIBUTED = ("the model's train function over per-replica batches (as fit runs it under its strategy); its "
                     "logs read as NumPy values: the step's work is done when it returns")


def _distributed_run(model: Any, strategy: Any, first_batch: Any):
    """One training step of a model built under a `tf.distribute` strategy, on per-replica batches.

    `train_on_batch` cannot take them (Keras 3 builds the model from the batch's shape, which a
    per-replica value lacks), and given a plain batch it would hand each replica the whole of it. So
    the step does what `fit` does with a distributed dataset: the model's own train function, one
    step over an iterator of one per-replica batch, each replica on its slice; the logs are reduced
    across replicas by Keras and read as NumPy (which waits for every replica's work)."""
    import numpy as np

    from pipediag.steps.distributed import is_distributed, split_batch

    ready = False

    def run(batch: Any) -> Any:
        nonlocal ready
        if not ready:
            build = getattr(model, "_maybe_symbolic_build", None)  # Keras 3: build from a plain batch's shapes
            if build is not None and first_batch is not None:
                build(data_batch=keras.utils.unpack_x_y_sample_weight(first_batch))
            model.make_train_function()
            ready = True
        if not is_distributed(batch):
            batch = split_batch(batch, strategy)
        model.reset_metrics()
        logs = model.train_function(iter([keras.utils.unpack_x_y_sample_weight(batch)]))
        return {name: np.asarray(value) for name, value in logs.items()}

    return run
