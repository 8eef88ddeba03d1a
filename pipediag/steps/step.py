"""The step under test, as the modes see it: one callable that trains on one batch and returns
only when the work is done, plus a description for the report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

BATCH_FORMATS = ("tf", "numpy")


@dataclass(frozen=True)
class StepInfo:
    kind: str  # keras (--model) | user (--step) | standin (neither was given)
    description: str  # what it is, in a sentence the report can show
    batch_format: str = "tf"  # what the step receives: tf tensors or numpy arrays

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepInfo:
        return cls(**data)


@dataclass(frozen=True)
class Step:
    run: Callable[[Any], Any]  # trains on one batch; returns once the result is computed
    info: StepInfo
