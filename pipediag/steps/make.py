"""Choosing the step under test: the user's Keras model, the user's step, or a stand-in."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pipediag.steps.loss_watch import LossWatch
from pipediag.steps.step import Step


def make_step(model: Any | None, step: Any | None, label: str | None, batch_format: str, first_batch: Any,
              element_spec: Any = None) -> Step:
    """A Keras model (`--model`), a step function (`--step`), or else a stand-in matched to
    `first_batch` and `element_spec` (the dataset's: which dimensions change between batches)."""
    from pipediag.steps.keras_step import keras_step
    from pipediag.steps.standin import standin_step
    from pipediag.steps.user_step import user_step

    if model is not None:
        made = keras_step(model, label or "the model", first_batch=first_batch)
    elif step is not None:
        made = user_step(step, label or "the step", batch_format)
    else:
        made = standin_step(first_batch, element_spec)
    return watched(made)


def watched(step: Step) -> Step:
    """The step with its loss watched for NaN and infinity (only results that are host numbers)."""
    watch = LossWatch()
    dispatch = None if step.dispatch is None else watch.wrap_dispatch(step.dispatch)
    return replace(step, run=watch.wrap(step.run), dispatch=dispatch, loss_watch=watch)
