"""The verdict as a record: one bottleneck, a confidence, a headline and evidence lines, with the
facts keys that name what limits the step (verdict.rules decides it; fixes, results and report read it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pipediag.records.kinds import Bottleneck, Confidence

BOTTLENECKS = ("input", "compute", "memory", "host", "inconclusive")

# facts["gpu_limit"]: what GPM says limits the step on the GPU, when it could tell.
GPU_LIMIT_SMALL_KERNELS = "small_kernels"
GPU_LIMIT_MEMORY_BANDWIDTH = "memory_bandwidth"
GPU_LIMIT_MATH = "math"

# facts["memory_source"] for a memory verdict about the pipeline's own buffers.
MEMORY_SOURCE_BUFFERS = "pipeline_buffers"


def lower(confidence: Confidence) -> Confidence:
    """One level less sure: high -> medium -> low (low stays low)."""
    return {"high": "medium", "medium": "low", "low": "low"}[confidence]


@dataclass(frozen=True)
class CpuPattern:
    kind: str  # saturated | one_core | idle | partial
    text: str


@dataclass(frozen=True)
class Verdict:
    bottleneck: Bottleneck
    confidence: Confidence
    headline: str
    evidence: tuple[str, ...]
    reason: str | None = None  # for inconclusive: why no verdict
    cpu_pattern: CpuPattern | None = None
    facts: dict[str, Any] = field(default_factory=dict)  # the key numbers, for machines
    stage: str | None = None  # the stage the verdict blames, when it blames one: "shuffle(10922)"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = list(self.evidence)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        pattern = d.get("cpu_pattern")
        return cls(
            bottleneck=d["bottleneck"],
            confidence=d["confidence"],
            headline=d["headline"],
            evidence=tuple(d["evidence"]),
            reason=d.get("reason"),
            cpu_pattern=None if pattern is None else CpuPattern(**pattern),
            facts=dict(d.get("facts", {})),
            stage=d.get("stage"),
        )
