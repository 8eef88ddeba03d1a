"""Which GPUs the job uses, so that only those are sampled and reported.

In order: an explicit choice (`--gpus 0,2` or UUIDs), else `CUDA_VISIBLE_DEVICES` (what every CUDA
framework in the process can see), else every GPU NVML lists. Entries are NVML indices or UUIDs
(`GPU-…`, a unique prefix is enough, as CUDA accepts). When nothing chose (every GPU is read), the
analysis keeps the GPUs NVML lists this process on (analysis.gpu.job_gpus): the others are other
jobs'. A GPU the job was given but does not use is kept, to be told as idle.

NVML numbers GPUs in PCI bus order; CUDA, by default, fastest first. On a host of identical GPUs the
two orders agree; on a mixed host an index in CUDA_VISIBLE_DEVICES may name another GPU than NVML's
index (set CUDA_DEVICE_ORDER=PCI_BUS_ID, or use UUIDs, which are unambiguous).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipediag.errors import UsageError

SOURCE_EXPLICIT = "--gpus"
SOURCE_CUDA = "CUDA_VISIBLE_DEVICES"
SOURCE_ALL = "every GPU NVML lists"
SOURCE_PROCESS = "those NVML lists this process on"


@dataclass(frozen=True)
class GpuSelection:
    """The GPUs to sample: `entries` (NVML indices as text, or UUIDs), None for every GPU."""

    entries: tuple[str, ...] | None
    source: str

    @classmethod
    def every(cls) -> GpuSelection:
        return cls(None, SOURCE_ALL)

    @classmethod
    def choose(cls, explicit: str | Sequence[int | str] | None = None,
               environ: Mapping[str, str] | None = None) -> GpuSelection:
        """The explicit choice when given, else CUDA_VISIBLE_DEVICES when set, else every GPU."""
        if explicit is not None:
            entries = _split(explicit)
            if not entries:
                raise UsageError("--gpus names no GPU", "give NVML indices or UUIDs, e.g. --gpus 0,1")
            return cls(entries, SOURCE_EXPLICIT)
        environ = os.environ if environ is None else environ
        visible = environ.get("CUDA_VISIBLE_DEVICES")
        if visible is None:
            return cls.every()
        return cls(_split(visible), SOURCE_CUDA)

    def resolve(self, devices: Sequence[tuple[int, str | None]]) -> tuple[tuple[int, ...], str | None]:
        """NVML indices of the chosen GPUs, in the order chosen, from (index, uuid) of every GPU;
        and what could not be matched (None when all were). CUDA stops reading CUDA_VISIBLE_DEVICES
        at the first entry it cannot use; an explicit --gpus list is read whole."""
        if self.entries is None:
            return tuple(index for index, _ in devices), None
        chosen: list[int] = []
        unmatched: list[str] = []
        for entry in self.entries:
            index = _match(entry, devices)
            if index is None:
                unmatched.append(entry)
                if self.source == SOURCE_CUDA:
                    break
            elif index not in chosen:
                chosen.append(index)
        if not unmatched:
            return tuple(chosen), None
        known = ", ".join(f"{i}" + (f" ({u})" if u else "") for i, u in devices) or "none"
        return tuple(chosen), (f"{self.source} names {', '.join(unmatched)}, which matches no GPU NVML lists "
                               f"(indices and UUIDs: {known})")

    def describe(self, resolved: Sequence[int]) -> str:
        """One line: which GPUs, and why those (e.g. "GPUs 0, 2 (CUDA_VISIBLE_DEVICES)")."""
        names = ", ".join(str(i) for i in resolved) or "none"
        return f"GPU{'s' if len(resolved) != 1 else ''} {names} ({self.source})"


def _split(value: str | Sequence[int | str]) -> tuple[str, ...]:
    parts = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return tuple(p.strip() for p in parts if p.strip())


def _match(entry: str, devices: Sequence[tuple[int, str | None]]) -> int | None:
    if entry.lstrip("-").isdigit():
        index = int(entry)
        return index if any(i == index for i, _ in devices) else None
    prefix = entry if entry.upper().startswith(("GPU-", "MIG-")) else f"GPU-{entry}"
    hits = [i for i, uuid in devices if uuid and uuid.lower().startswith(prefix.lower())]
    return hits[0] if len(hits) == 1 else None
