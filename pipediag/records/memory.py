"""Device memory as a framework reports it (JAX, PyTorch, TensorFlow): peak, in use, limit."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class FrameworkMemory:
    framework: str  # jax | torch | tensorflow
    api: str  # the call the numbers come from
    device: str
    peak_bytes: int | None
    in_use_bytes: int | None
    limit_bytes: int | None  # what the framework may use on this device, when it says
    scope: str  # mode | process

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FrameworkMemory:
        return cls(**d)
