"""The hook on Keras 3 `Model.fit`: the dataset fit got becomes the training dataset, and each
batch its train function takes goes through the session, as `callbacks.keras.InputMonitor` takes
it (the same wrapping of `train_function`: `next(iterator)` taken out, then Keras's own one-batch
step on it). What fit cannot be run with is said before anything runs: the PyTorch backend,
`steps_per_execution` > 1, arrays or Python generators instead of a tf.data.Dataset.
"""

from __future__ import annotations

import inspect
from typing import Any

from pipediag.backends.tf import keras, tf
from pipediag.callbacks.keras import _unwrapped, unsupported_reason
from pipediag.run.budget import StepBudget


def model_class() -> type:
    """The class whose `fit` Keras 3's models run (the backend's trainer)."""
    return next(c for c in keras.Model.__mro__ if "fit" in c.__dict__)


def refusal(model: Any, x: Any) -> tuple[str, str] | None:
    """(why not, what to do) when this fit cannot be diagnosed; None when it can."""
    backend = keras.backend.backend() if hasattr(keras, "backend") else "unknown"
    if backend not in ("tensorflow", "jax") or not keras.__version__.startswith("3."):
        reason = unsupported_reason(model) or f"Keras {keras.__version__} on {backend}"
        return (f"pipediag run cannot time model.fit here: {reason}",
                "run the script with KERAS_BACKEND=tensorflow or jax (Keras 3), or diagnose the pipeline "
                "with 'pipediag diagnose file.py:make_dataset --model file.py:make_model'")
    spe = getattr(model, "steps_per_execution", 1)
    if spe != 1:
        return (f"model.fit runs with steps_per_execution={spe}: Keras takes {spe} batches inside one compiled "
                "call, so the wait for each batch cannot be timed or swapped",
                "compile with steps_per_execution=1 while diagnosing (set it back afterwards)")
    if isinstance(x, tf.data.Dataset):
        return None
    what = type(x).__name__
    if hasattr(x, "__array__") or isinstance(x, (list, tuple, dict)):
        return (f"model.fit got in-memory arrays ({what}), not a tf.data.Dataset: there is no input pipeline "
                "to diagnose or swap",
                "wrap them: ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x)).batch(32)"
                ".prefetch(tf.data.AUTOTUNE), then model.fit(ds, ...)")
    if hasattr(x, "__next__") or hasattr(x, "__iter__"):
        return (f"model.fit got a Python {what}, not a tf.data.Dataset: pipediag run swaps tf.data pipelines only",
                "wrap it: ds = tf.data.Dataset.from_generator(make_gen, output_signature=...).prefetch("
                "tf.data.AUTOTUNE), then model.fit(ds, ...); or 'pipediag diagnose' a function returning that "
                "Dataset")
    return (f"model.fit got a {what}, not a tf.data.Dataset: pipediag run swaps tf.data pipelines only",
            "give fit a tf.data.Dataset")


def fit_budget(original, model: Any, x: Any, args: tuple, kwargs: dict) -> StepBudget | None:
    """The steps this fit will run: (epochs - initial_epoch) x (steps_per_epoch, else the dataset's
    cardinality); None when the dataset's length is infinite or unknown (fit then runs each epoch
    until the data ends, and a window, which never ends the data, is not cut short by it)."""
    try:
        bound = inspect.signature(original).bind(model, x, *args, **kwargs)
    except TypeError:
        return None
    given = bound.arguments
    epochs, initial = given.get("epochs", 1), given.get("initial_epoch", 0)
    steps_per_epoch = given.get("steps_per_epoch")
    if not isinstance(epochs, int) or not isinstance(initial, int) or epochs <= initial:
        return None
    if steps_per_epoch:
        per, how = int(steps_per_epoch), "its steps_per_epoch"
    else:
        try:
            per, how = int(x.cardinality()), "the dataset's cardinality"
        except (AttributeError, TypeError, ValueError, tf.errors.OpError):
            return None
        if per <= 0:
            return None
    n = epochs - initial
    return StepBudget(total=n * per, how=f"model.fit: {n} epoch(s) x {per} steps, {how}", steps_per_epoch=per,
                      epochs=n)


def fit_hook(session, original):
    def fit(model, x=None, *args, **kwargs):
        if not session.active:
            return original(model, x, *args, **kwargs)
        refused = refusal(model, x)
        if refused is not None:
            session.refuse(*refused)
        source = session.fit_source(x, model, fit_budget(original, model, x, args, kwargs))
        if source is None:  # a later fit once the diagnosis is over: left as it is
            return original(model, x, *args, **kwargs)
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), _FitTap(session, source)]
        return original(model, x, *args, **kwargs)

    return fit


class _FitTap(keras.callbacks.Callback):
    """Wraps fit's train function so each batch is taken through the session; cuts a step at
    validation and at each epoch's end (what fit does then is in no step)."""

    def __init__(self, session, source):
        super().__init__()
        self.session, self.source = session, source
        self._original = None

    def on_train_begin(self, logs=None) -> None:
        self._original = _unwrapped(getattr(self.model, "train_function", None))
        if not callable(self._original):
            self.session.refuse("Keras built no train_function for this fit: there is no step to time",
                                "report this case with your Keras version")
        self.model.train_function = self._train_function

    def on_test_begin(self, logs=None) -> None:
        self.session.cut(self.source)

    def on_epoch_begin(self, epoch, logs=None) -> None:
        self.source.steps.current_epoch = epoch  # Keras makes a new iterator each epoch (no steps_per_epoch)

    def on_epoch_end(self, epoch, logs=None) -> None:
        self.session.cut(self.source)

    def on_train_end(self, logs=None) -> None:
        self.session.cut(self.source)
        if self._original is not None:
            self.model.train_function = self._original

    def _train_function(self, *args):
        # TensorFlow: train_function(iterator); JAX: train_function(state, iterator).
        iterator = args[-1]

        def real_next():
            try:
                return next(iterator)
            except (StopIteration, tf.errors.OutOfRangeError):
                raise StopIteration from None

        data = self.session.take(self.source, real_next)
        if len(args) == 2:
            return self._original(args[0], iter([data]))
        return self._original([data])
