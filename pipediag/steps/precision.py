"""Keras mixed precision for a model pipediag builds, or has a builder build: the dtype policy set
while the model is constructed, the one before it put back afterwards.

Keras 3 fixes each layer's dtype policy when the layer is constructed, from the global policy of
that moment (`keras.config.set_dtype_policy`, the same on the TensorFlow, JAX and PyTorch
backends), and `compile` wraps the optimizer in a LossScaleOptimizer when the model's policy is
mixed_float16. So the policy only has to hold while the model is built and compiled: restoring it
then leaves a library caller's later models as they were. Keras keeps the policy per thread; the
model is built on the calling thread.

A step function (`--step`, any framework) is the user's own code: pipediag cannot set its
precision, so asking for one is refused (`refuse_for_step`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pipediag.errors import UsageError

FLOAT32 = "float32"
PRECISIONS = (FLOAT32, "mixed_float16", "mixed_bfloat16")
_T = TypeVar("_T")


def check(precision: str) -> str:
    if precision not in PRECISIONS:
        raise UsageError(f"unknown precision {precision!r}", f"use one of {', '.join(PRECISIONS)}")
    return precision


@contextmanager
def policy(precision: str) -> Iterator[None]:
    """Keras's global dtype policy is `precision` inside the block, the previous one after it."""
    check(precision)
    from pipediag.backends.tf import keras

    before = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(precision)
    try:
        yield
    finally:
        keras.mixed_precision.set_dtype_policy(before)


def built_under(precision: str | None, build: Callable[[], _T]) -> _T:
    """`build()` under `precision`'s policy; None: under whatever policy is set (nothing changed)."""
    if precision is None:
        return build()
    with policy(precision):
        return build()


def precision_of(model: Any) -> str | None:
    """The dtype policy a Keras model was built under ("float32", "mixed_float16", ...), read from
    the model; None for anything that is not a Keras model."""
    name = getattr(getattr(model, "dtype_policy", None), "name", None)
    return name if isinstance(name, str) else None


def refuse_for_step(precision: str | None, what: str) -> None:
    """A precision asked for a step pipediag does not build (`what`: "a --step function", "the
    stand-in step") is a usage error: nothing here could apply it."""
    if precision is None:
        return
    raise UsageError(
        f"--precision {precision} applies to a Keras model pipediag builds; {what} is code pipediag only calls",
        "give the Keras model builder with --model (it is called under the policy), or set the precision in "
        "your own step (keras.config.set_dtype_policy, torch.autocast, jnp.bfloat16) and leave --precision out",
    )


def cpu_note(precision: str, backend: str, device: str) -> str | None:
    """What a mixed policy means on a CPU: it runs, but gains little there or loses (one run of
    benchmarks/precision_cpu.py, ResNet-20: TensorFlow's CPU build 6.3x float32's step time under
    mixed_float16, 0.88x under mixed_bfloat16; JAX 1.22x and 0.91x), so a CPU profile says nothing
    of what the policy gains on a GPU."""
    if precision == FLOAT32 or device != "cpu":
        return None
    half = "float16" if precision == "mixed_float16" else "bfloat16"
    eigen = (" (TensorFlow's CPU build may log that oneDNN does not take float16 and it falls back to Eigen)"
             if backend == "tensorflow" and half == "float16" else "")
    return (f"{precision} on the CPU (Keras {backend} backend): the layers compute in {half}, which a CPU runs "
            f"little faster or slower than float32{eigen}; these numbers show the policy runs here, not what it "
            "gains on a GPU")


def recorded(asked: str | None, model: Any | None, step: Any | None) -> tuple[str | None, str | None]:
    """What a run records as its precision, read from the model it was given, and why it is None
    when it is. `asked`: the precision the caller says the model was built under (the CLI built it
    so); a model built under another, or no Keras model to build, is a usage error."""
    if asked is not None:
        check(asked)
        if model is None:
            refuse_for_step(asked, "a step function" if step is not None else "the stand-in step (no model given)")
        if precision_of(model) != asked:
            raise UsageError(
                f"precision {asked} was asked for, but the model was built under {precision_of(model) or 'no Keras policy'}",
                f"build it under the policy: 'with pipediag.steps.precision.policy(\"{asked}\"): model = make_model()', "
                f"or let the command line do it: pipediag sweep ... --model SPEC --precision {asked}")
        return asked, None
    if model is not None:
        got = precision_of(model)
        return got, None if got else "the model has no Keras dtype policy"
    if step is not None:
        return None, "a step function: its precision is its own code's, which pipediag does not read"
    return None, "the stand-in step: its precision is not recorded"
