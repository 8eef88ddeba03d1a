"""Host memory the pipeline's own buffers hold: the shuffle buffers, from the graph and measured sizes.

A `shuffle(n)` fills its buffer with n elements before the first one comes out and keeps it
full while the iterator lives, so it holds n × (bytes per element) of host memory for the
whole run. n comes from the graph; the bytes per element are the mean of a few real elements the
anatomy sampled (after the shuffle, or of the stage feeding it: the same elements). A buffer
larger than its input holds only the input (`shuffle(10000)` of 100 elements holds 100).

Pure: stages in, estimates out. Unknown sizes give no estimate, never a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipediag.records.stage import Stage

# A smaller buffer the fix proposes takes at most this share of the RAM budget: the rest is for
# TensorFlow itself, the model, the prefetch buffers and the batches in flight.
SUGGESTED_BUFFER_SHARE = 0.25


@dataclass(frozen=True)
class BufferEstimate:
    stage: str  # the stage's label, as the user wrote it: "shuffle(10922)"
    index: int  # in the pipeline's stages
    elements: int  # elements held: the buffer size, or the input's length when that is smaller
    bytes_per_element: float  # mean of sampled elements

    @property
    def total_bytes(self) -> float:
        return self.elements * self.bytes_per_element

    def suggested_elements(self, ram_budget_bytes: float) -> int:
        """A buffer size that fits in SUGGESTED_BUFFER_SHARE of the budget: the largest power of
        two that does (at least 1), so the number reads as a choice, not a computed oddity."""
        fits = int(SUGGESTED_BUFFER_SHARE * ram_budget_bytes // max(self.bytes_per_element, 1.0))
        size = 1
        while size * 2 <= fits:
            size *= 2
        return size

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_bytes": self.total_bytes}


def shuffle_buffers(stages: Sequence[Stage]) -> list[BufferEstimate]:
    """An estimate for each shuffle stage whose buffer size and element size are known."""
    out = []
    for i, s in enumerate(stages):
        if s.kind != "shuffle" or s.buffer_size is None or s.buffer_size <= 0:
            continue
        before = stages[i - 1] if i > 0 else None
        size = s.bytes_per_element
        if size is None and before is not None:
            size = before.bytes_per_element  # what the shuffle reads is what it buffers
        if size is None:
            continue
        elements = s.buffer_size
        if before is not None and isinstance(before.cardinality, int) and before.cardinality >= 0:
            elements = min(elements, before.cardinality)
        out.append(BufferEstimate(s.label, s.index, elements, float(size)))
    return out
