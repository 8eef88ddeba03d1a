"""A change pipediag made (or chose not to make) to the user's pipeline for the tuned mode.

Plain data: the tuning rules decide them from the pipeline's stages and measured facts, the
TensorFlow side applies them to the graph, and the fixes and report read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pipediag.records.kinds import ChangeKind
from pipediag.records.record import DictRecord


@dataclass(frozen=True)
class Change(DictRecord):
    kind: ChangeKind  # the fix kind it corresponds to
    stage: str | None  # the user's stage it touches, as they wrote it: "map(decode_example)"
    node: str | None  # the graph node, for the TensorFlow side
    description: str  # what was (or would be) changed, concretely
    applied: bool
    reason: str | None = None  # why it was left out, when it was
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Names this change among the others (a kind applies at most once per stage)."""
        return f"{self.kind}@{self.node or 'pipeline'}"

    def skipped(self, reason: str, **details: Any) -> Change:
        """This change, left out for `reason`, with `details` added to its own."""
        return replace(self, applied=False, reason=reason, details={**self.details, **details})
