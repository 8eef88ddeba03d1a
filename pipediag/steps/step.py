"""The step under test, as the modes see it: one callable that trains on one batch and returns
only when the work is done, plus a description for the report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pipediag.records.step import StepInfo
from pipediag.steps.loss_watch import LossWatch

# What a --step receives: TensorFlow tensors, NumPy arrays (zero-copy views of CPU tensors), or
# objects with __dlpack__ that JAX (jnp.from_dlpack) and PyTorch (torch.from_dlpack) take
# without a copy.
BATCH_FORMATS = ("tf", "numpy", "dlpack")


@dataclass(frozen=True)
class Observed:
    framework: str | None
    sync: str | None
    devices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Step:
    run: Callable[[Any], Any]  # trains on one batch; returns once the result is computed
    info: StepInfo
    observed: Callable[[], Observed] | None = None  # what running it showed (framework, sync)
    # Starts the step and returns at once with a function that waits for its work (a JAX or
    # PyTorch step queues device work and returns): lets the modes keep one step in flight
    # while fetching the next batch, as a training loop does. None: `run` is all there is.
    dispatch: Callable[[Any], Callable[[], Any]] | None = None
    # Sees each result of `run` and notes a NaN or infinite loss (steps/loss_watch.py).
    loss_watch: LossWatch | None = None
    # A tf.distribute strategy with several replicas: the step takes per-replica batches, and the
    # modes feed it through the strategy (modes.distributed). None: plain batches.
    strategy: Any = None
    # The time the step's caller spent outside any step so far, in ns (a script's loop running
    # Keras' validation or an epoch's end between two window steps: run.swap.Handoff): kept out of
    # the step times and of the mode's time cap. None: every moment of a step is the step.
    paused_ns: Callable[[], int] | None = None
    # The same step wrapped in tf.function by pipediag, made on demand: what an eager step
    # (records.step.EagerUse) runs at compiled. None where pipediag cannot wrap it (a Keras model,
    # a script's loop, a step fed NumPy or DLPack batches, a distributed step).
    compiled: Callable[[], Step] | None = None

    def described(self) -> StepInfo:
        """The description with what running it showed: its framework and how it was waited for."""
        if self.observed is None:
            return self.info
        seen = self.observed()
        return replace(self.info, framework=seen.framework or self.info.framework, sync=seen.sync,
                       devices=self.info.devices or seen.devices)
