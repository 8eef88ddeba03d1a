"""Choosing the step under test: the user's Keras model, the user's step, or a stand-in."""

from __future__ import annotations

from typing import Any

from pipediag.steps.step import Step


def make_step(model: Any | None, step: Any | None, label: str | None, batch_format: str, first_batch: Any) -> Step:
    """A Keras model (`--model`), a step function (`--step`), or else a stand-in matched to
    `first_batch`."""
    from pipediag.steps.keras_step import keras_step
    from pipediag.steps.standin import standin_step
    from pipediag.steps.user_step import user_step

    if model is not None:
        return keras_step(model, label or "the model")
    if step is not None:
        return user_step(step, label or "the step", batch_format)
    return standin_step(first_batch)
