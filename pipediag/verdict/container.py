"""The container's CPU limit in the verdict: what the quota did in each mode, as evidence.

A CFS quota lets the container run `quota` of CPU time per period, then stops ("throttles") its
threads until the next period. A mode throttled in a large share of its periods ran at the
quota: on a 64-core host with a 2-core quota, 62 idle cores cannot help it, and the quota, not
the host, is what the pipeline is short of. docs/verdict.md, "The container", gives the reasons.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pipediag.analysis.modes import ModeSummary
from pipediag.records.container import ContainerLimits, Throttling, cores_text
from pipediag.verdict import thresholds as T

# The modes whose throttling the evidence names first: the fed pipeline is the one the verdict is
# about; input_only is the pipeline alone; synthetic says whether the step alone hits the quota too.
_ORDER = ("pipeline", "input_only", "tuned", "synthetic")


def throttled(m: ModeSummary | None) -> Throttling | None:
    """The mode's throttling when it ran at the quota (THROTTLED_FRAC of its periods or more)."""
    t = m.throttling if m is not None else None
    if t is None or t.throttled_frac is None or t.throttled_frac < T.THROTTLED_FRAC:
        return None
    return t


def _line(name: str, t: Throttling) -> str:
    return (f"throttled {100 * t.throttled_frac:.0f}% of periods in {name} mode ({t.throttled_periods} of "
            f"{t.periods}; {t.throttled_s:.1f} s throttled, summed over CPUs, in {t.span_s:.1f} s)")


def container_evidence(modes: dict[str, ModeSummary | None],
                       container: ContainerLimits | None) -> tuple[list[str], dict[str, Any]]:
    """Evidence lines and facts about the container's CPU limit; none where the host's cores are
    all this process may use."""
    if container is None or not container.cpu_limited:
        return [], {}
    facts: dict[str, Any] = {"effective_cores": container.effective_cores, "cpu_limit": container.cpu_source,
                             "host_cores": container.host_cores}
    limit = container.cpu_text()
    if container.cpu_source != "quota":
        # A cpuset or an affinity mask does not throttle: it just has fewer cores to offer.
        return [f"this process may run on {cores_text(container.effective_cores)}: {limit}; CPU use is judged "
                "against those"], facts
    facts["cpu_quota_cores"] = container.quota_cores
    hot = [(name, throttled(modes.get(name))) for name in _ORDER if throttled(modes.get(name)) is not None]
    measured = [(name, modes[name].throttling) for name in _ORDER
                if modes.get(name) is not None and modes[name].throttling is not None
                and modes[name].throttling.throttled_frac is not None]
    for name, t in measured:
        facts[f"{name}_throttled_frac"] = t.throttled_frac
    if not hot:
        if measured:
            name, t = measured[0]
            return [f"{limit}: throttled in only {100 * t.throttled_frac:.0f}% of periods in {name} mode, under the "
                    f"{100 * T.THROTTLED_FRAC:.0f}% line: the quota did not hold this run back"], facts
        why = next((m.throttling_reason for m in modes.values() if m is not None and m.throttling_reason), None)
        return [f"{limit}; its throttling was not read ({why or 'no counters'}), so whether it held the run back "
                "is unknown"], facts
    name, t = hot[0]
    facts["throttled_mode"] = name
    who = "the pipeline" if name in ("pipeline", "input_only", "tuned") else "the step"
    text = f"{_line(name, t)}: {limit}, limits {who}"
    step = throttled(modes.get("synthetic"))
    if name != "synthetic" and step is not None:
        text += f"; the step alone hit it too ({100 * step.throttled_frac:.0f}% in synthetic mode, with free input)"
    return [text], facts


def with_container(verdict, modes: dict[str, ModeSummary | None], container: ContainerLimits | None):
    """The verdict with the container's evidence and facts added (records.verdict.Verdict)."""
    lines, facts = container_evidence(modes, container)
    if not lines and not facts:
        return verdict
    return replace(verdict, evidence=verdict.evidence + tuple(lines), facts={**verdict.facts, **facts})
