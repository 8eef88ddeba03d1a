"""What the step under test is, for the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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
    # Whether the step is compiled with XLA already (a Keras model's resolved jit_compile: "auto" is
    # XLA on a GPU); None when unknown. An XLA fix is not offered to a step that has it.
    xla: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepInfo:
        return cls(**{**data, "devices": tuple(data.get("devices") or ())})
