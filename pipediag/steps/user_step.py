"""A user's own step for `--step`: any framework, synchronised before the timer stops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipediag.errors import UsageError
from pipediag.steps.step import Step, StepInfo
from pipediag.steps.sync import wait_until_computed


def user_step(fn: Any, label: str, batch_format: str) -> Step:
    if not callable(fn):
        raise UsageError(
            f"--step {label} returned a {type(fn).__name__}, not a function",
            "the spec names a factory: a function that returns step(batch)",
        )
    step_fn: Callable[[Any], Any] = fn

    def run(batch: Any) -> Any:
        result = step_fn(batch)
        wait_until_computed(result)
        return result

    name = getattr(fn, "__name__", type(fn).__name__)
    return Step(
        run=run,
        info=StepInfo(
            kind="user",
            description=f"step function '{name}' from {label}, fed {batch_format} batches",
            batch_format=batch_format,
        ),
    )
