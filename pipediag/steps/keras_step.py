"""A real Keras training step for `--model`: forward, loss, gradients and optimizer update.

`train_on_batch` runs the model's own `train_step` through the same compiled function `fit`
uses (`make_train_function`: tf.function, XLA when the model was compiled with jit_compile),
and returns its logs as NumPy values, so the step has finished when it returns.
"""

from __future__ import annotations

from typing import Any

from pipediag.backends.tf import keras
from pipediag.errors import UsageError
from pipediag.steps.step import Step, StepInfo


def _is_compiled(model: Any) -> bool:
    compiled = getattr(model, "compiled", None)  # Keras 3
    if compiled is not None:
        return bool(compiled)
    return getattr(model, "optimizer", None) is not None  # tf-keras 2


def keras_step(model: Any, label: str) -> Step:
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

    def run(batch: Any) -> Any:
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
        return model.train_on_batch(x, y, sample_weight=sample_weight, return_dict=True)

    params = model.count_params() if model.built else None
    size = f", {params:,} parameters" if params else ""
    jit = getattr(model, "jit_compile", None)
    return Step(
        run=run,
        info=StepInfo(
            kind="keras",
            description=f"Keras model '{model.name}' from {label}{size}: one train_on_batch per step"
            + (f" (jit_compile={jit})" if jit is not None else ""),
        ),
    )
