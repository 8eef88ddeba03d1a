"""Device memory as a framework reports it (JAX, PyTorch, TensorFlow): peak, in use, limit."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pipediag.records.record import DictRecord


@dataclass(frozen=True)
class FrameworkMemory(DictRecord):
    framework: str  # jax | torch | tensorflow
    api: str  # the call the numbers come from
    device: str
    peak_bytes: int | None
    in_use_bytes: int | None
    limit_bytes: int | None  # what the framework may use on this device, when it says
    scope: str  # mode | process


@dataclass
class MemoryLimit:
    limit_bytes: int
    total_bytes: int
    applied: list[str] = field(default_factory=list)  # what was set, framework by framework
    not_applied: list[str] = field(default_factory=list)  # where it could not be, and why

    @property
    def fraction(self) -> float:
        return self.limit_bytes / self.total_bytes

    @property
    def text(self) -> str:
        return f"a {self.limit_bytes / 2**20:.0f} MiB card simulated on {self.total_bytes / 2**30:.1f} GiB"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fraction": self.fraction}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MemoryLimit:
        return cls(d["limit_bytes"], d["total_bytes"], list(d.get("applied", [])), list(d.get("not_applied", [])))
