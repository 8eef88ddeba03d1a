"""Rule 1 of the verdict, memory: a mode ran out of memory, the host's memory nearly exhausted, this
process near the container's memory limit, or the pipeline's shuffle buffers over the RAM budget."""

from __future__ import annotations

from collections.abc import Sequence

from pipediag.analysis.buffers import BufferEstimate
from pipediag.analysis.modes import ModeSummary
from pipediag.records.container import ContainerLimits
from pipediag.records.kinds import OUT_OF_MEMORY
from pipediag.records.verdict import MEMORY_SOURCE_BUFFERS, Verdict
from pipediag.verdict import thresholds as T
from pipediag.verdict.text import pct


def memory_verdict(present: list[ModeSummary], buffers: Sequence[BufferEstimate], ram_budget_bytes: int | None,
                    container: ContainerLimits | None) -> Verdict | None:
    """1. memory: a real out-of-memory error, or the host running out; None when neither."""
    for m in present:
        if m.stop_reason == OUT_OF_MEMORY:
            msg = m.error.message.splitlines()[0][:200] if m.error else "out of memory"
            return Verdict(
                "memory", "high",
                f"the step ran out of memory in {m.name} mode",
                (f"{m.error.type if m.error else 'error'} from {m.error.framework if m.error else 'the step'}: {msg}",
                 f"{m.name} mode stopped after {m.steps} timed steps"),
                facts={"oom_mode": m.name},
            )
    for m in present:
        if m.host_available_min_bytes is not None and m.host_total_bytes:
            frac = m.host_available_min_bytes / m.host_total_bytes
            if frac < T.HOST_MEMORY_LOW_FRAC:
                return Verdict(
                    "memory", "medium",
                    f"host memory nearly exhausted in {m.name} mode",
                    (f"available host memory fell to {m.host_available_min_bytes / 2**30:.2f} GiB "
                     f"({pct(frac)} of {m.host_total_bytes / 2**30:.1f} GiB)",
                     f"process RSS peaked at {(m.rss_max_bytes or 0) / 2**30:.2f} GiB: shuffle buffers and caches live here"),
                    facts={"host_available_frac": frac},
                )
    near_limit = _near_memory_limit(present, container)
    if near_limit is not None:
        return near_limit
    return _buffers_over_budget(buffers, ram_budget_bytes, present, container)



def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.0f} MiB"


def _near_memory_limit(present: list[ModeSummary], container: ContainerLimits | None) -> Verdict | None:
    """This process's RSS came within HOST_MEMORY_LOW_FRAC of the container's memory limit: the
    kernel kills the job at the limit, whatever the host has free. RSS is a lower bound of what
    the cgroup is charged (its page cache counts too), so a peak this close is already too close."""
    limit = container.memory_limit_bytes if container is not None else None
    if not limit:
        return None
    for m in present:
        if m.rss_max_bytes is not None and m.rss_max_bytes >= (1 - T.HOST_MEMORY_LOW_FRAC) * limit:
            return Verdict(
                "memory", "medium",
                f"the container's memory limit is nearly reached in {m.name} mode",
                (f"process RSS peaked at {_gib(m.rss_max_bytes)}, {pct(m.rss_max_bytes / limit)} of the container's "
                 f"memory limit of {_gib(limit)} (the host has {_gib(container.host_memory_bytes or 0)}): at the "
                 "limit the kernel kills the job",
                 "shuffle buffers and caches live in this memory"),
                facts={"memory_limit_bytes": limit, "rss_max_bytes": m.rss_max_bytes},
            )
    return None


def _buffers_over_budget(buffers: Sequence[BufferEstimate], ram_budget_bytes: int | None,
                         present: list[ModeSummary], container: ContainerLimits | None = None) -> Verdict | None:
    """The shuffle buffers alone hold more host memory than the job may use. The estimate is
    buffer size (graph) x bytes per element (sampled): measured evidence, not a guess. The
    process's RSS peak says how far it is confirmed: over the budget too (high), not read
    (medium), or within it (low: the estimate and the measurement disagree)."""
    if not buffers:
        return None
    total = next((m.host_total_bytes for m in present if m.host_total_bytes), None)
    limit = container.memory_limit_bytes if container is not None else None
    if ram_budget_bytes:
        budget, whose, source = ram_budget_bytes, "the RAM budget (--ram-budget-mb)", "given"
    elif limit and (total is None or limit < total):
        budget, whose, source = limit, "the container's memory limit", "container_limit"
    else:
        budget, whose, source = total, "this host's memory", "host_total"
    held = sum(b.total_bytes for b in buffers)
    if not budget or held <= T.BUFFERS_OVER_BUDGET_FRAC * budget:
        return None
    biggest = max(buffers, key=lambda b: b.total_bytes)
    evidence = [
        f"`{biggest.stage}` holds ~{_gib(biggest.total_bytes)} of host memory: {biggest.elements} elements x "
        f"{biggest.bytes_per_element / 2**10:.0f} KiB (buffer size from the graph, bytes per element measured on "
        "sampled elements); a shuffle fills its whole buffer before the first element comes out",
        f"the pipeline's shuffle buffers hold ~{_gib(held)}, {held / budget:.1f}x {whose} of {_gib(budget)}: "
        "under a hard memory limit of that size the job is killed while the buffer fills",
    ]
    rss = max((m.rss_max_bytes for m in present if m.rss_max_bytes), default=None)
    if rss is None:
        confidence = "medium"
        evidence.append("this process's memory (RSS) was not read, so the estimate is not confirmed by a measurement")
    elif rss > budget:
        confidence = "high"
        evidence.append(f"this process's RSS peaked at {_gib(rss)}, over {whose} too")
    else:
        confidence = "low"
        evidence.append(f"but this process's RSS peaked at only {_gib(rss)}, within {whose}: the estimate and the "
                        "measurement disagree (elements sharing memory, or a buffer that never filled)")
    if biggest.total_bytes > budget:
        headline = f"host memory: `{biggest.stage}` alone holds more than {whose} allows"
    else:
        headline = f"host memory: the shuffle buffers (most in `{biggest.stage}`) hold more than {whose} allows"
    return Verdict(
        "memory", confidence, headline,
        tuple(evidence),
        facts={"memory_source": MEMORY_SOURCE_BUFFERS, "buffer_bytes": held, "ram_budget_bytes": budget,
               "ram_budget_source": source, "rss_max_bytes": rss},
        stage=biggest.stage,
    )
