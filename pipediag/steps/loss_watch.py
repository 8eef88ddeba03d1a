"""Watching the step's loss for NaN or infinity, without slowing the step.

A non-finite loss does not spoil the timings (NaN arithmetic costs what other arithmetic costs),
but a user who reads a diagnosis of a model that is not learning should be told. Only results
that are already host numbers are looked at — a Keras step's logs, the stand-in's loss, a --step
that returns a float or a NumPy value — so watching never waits for a device: a TensorFlow, JAX
or PyTorch tensor is left alone (reading it would force a sync the step did not ask for).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def loss_of(result: Any) -> float | None:
    """The loss in a step's result when it is a host number: a float, a one-element NumPy value,
    or a dict (Keras logs) with a 'loss'. None when there is none, or it is not a host number."""
    if isinstance(result, dict):
        return loss_of(result.get("loss"))
    if isinstance(result, bool):
        return None
    if isinstance(result, (float, int, np.generic)):
        return float(result)
    if isinstance(result, np.ndarray) and result.size == 1 and result.dtype.kind in "fiu":
        return float(result.reshape(-1)[0])
    return None


class LossWatch:
    """Counts the steps whose loss was NaN or infinite, and remembers the first."""

    def __init__(self) -> None:
        self.steps = 0
        self.non_finite = 0
        self.first_step: int | None = None
        self.first_value: float | None = None

    def see(self, result: Any) -> None:
        self.steps += 1
        loss = loss_of(result)
        if loss is not None and not math.isfinite(loss):
            self.non_finite += 1
            if self.first_step is None:
                self.first_step, self.first_value = self.steps, loss

    def wrap(self, run: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def watched(batch: Any) -> Any:
            result = run(batch)
            self.see(result)
            return result

        return watched

    def wrap_dispatch(self, dispatch: Callable[[Any], Callable[[], Any]]) -> Callable[[Any], Callable[[], Any]]:
        """The same for a step that is started, then waited for: the result is seen once waited for."""

        def watched(batch: Any) -> Callable[[], Any]:
            finish = dispatch(batch)

            def finished() -> Any:
                result = finish()
                self.see(result)
                return result

            return finished

        return watched

    def note(self, standin: bool = False) -> str | None:
        """A sentence for the report, or None when every loss seen was finite."""
        if self.first_step is None:
            return None
        where = "the first step" if self.first_step == 1 else f"step {self.first_step}"
        cause = ("the stand-in model was fed NaN, infinite or very large values: check the batches "
                 "(tf.debugging.check_numerics in a map)" if standin else
                 "check the batches for NaN or inf (tf.debugging.check_numerics in a map), the learning rate, "
                 "and any log or division by zero in the loss")
        return (f"the loss was {self.first_value} from {where} on ({self.non_finite} of {self.steps} steps): the "
                f"timings stand (NaN arithmetic costs the same), but the model is not learning; {cause}")
