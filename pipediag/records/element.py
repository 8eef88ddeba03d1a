"""What one batch of the pipeline looks like, as plain data for the report and the stand-in model."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Leaf:
    path: str  # where in the batch: "[0]", "['image']", "[0]['ids']"
    kind: str  # dense | ragged | sparse | other
    dtype: str
    shape: tuple[int | None, ...] | None  # from the element spec; None dims vary

    @property
    def label(self) -> str:
        dims = "?" if self.shape is None else ",".join("None" if d is None else str(d) for d in self.shape)
        prefix = "" if self.kind == "dense" else f"{self.kind} "
        return f"{self.path}: {prefix}{self.dtype}[{dims}]"


@dataclass(frozen=True)
class ElementInfo:
    leaves: tuple[Leaf, ...]
    batch_size: int | None  # leading dimension of the first batch
    batch_bytes: int | None  # bytes of the first batch in memory

    @property
    def structure(self) -> str:
        return ", ".join(leaf.label for leaf in self.leaves)

    def to_dict(self) -> dict[str, Any]:
        return {
            "structure": self.structure,
            "leaves": [asdict(leaf) for leaf in self.leaves],
            "batch_size": self.batch_size,
            "batch_bytes": self.batch_bytes,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ElementInfo:
        leaves = tuple(
            Leaf(path=d["path"], kind=d["kind"], dtype=d["dtype"], shape=None if d["shape"] is None else tuple(d["shape"]))
            for d in data["leaves"]
        )
        return cls(leaves=leaves, batch_size=data.get("batch_size"), batch_bytes=data.get("batch_bytes"))
