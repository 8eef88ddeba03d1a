"""The step under test, as the modes see it: one callable that trains on one batch and returns
only when the work is done, plus a description for the report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from pipediag.steps.loss_watch import LossWatch

# What a --step receives: TensorFlow tensors, NumPy arrays (zero-copy views of CPU tensors), or
# objects with __dlpack__ that JAX (jnp.from_dlpack) and PyTorch (torch.from_dlpack) take
# without a copy.
BATCH_FORMATS = ("tf", "numpy", "dlpack")


@dataclass(frozen=True)
class StepInfo:
    kind: str  # keras (--model) | user (--step) | standin (neither was given)
    description: str  # what it is, in a sentence the report can show
    batch_format: str = "tf"  # what the step receives: tf tensors, numpy arrays or dlpack objects
    framework: str | None = None  # seen in the step's results: tensorflow | jax | torch | host
    sync: str | None = None  # how pipediag waited for the step's work before stopping the timer
    # Its strategy's replica devices ("gpu:0", "cpu:3"), else those its results lived on
    # (steps.placement); () when unknown (plain values, or nothing returned).
    devices: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepInfo:
        return cls(**{**data, "devices": tuple(data.get("devices") or ())})


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

    def described(self) -> StepInfo:
        """The description with what running it showed: its framework and how it was waited for."""
        if self.observed is None:
            return self.info
        seen = self.observed()
        return replace(self.info, framework=seen.framework or self.info.framework, sync=seen.sync,
                       devices=self.info.devices or seen.devices)
