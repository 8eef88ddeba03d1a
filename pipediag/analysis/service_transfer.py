"""Whose ceiling a constant batch through tf.data service measured: the worker's, the client's, or unclear."""

from __future__ import annotations

from collections.abc import Sequence

BUSY_FRAC = 0.85  # busy this share of its cores (a worker) or of one core (the client): saturated, as for a host
SPARE_FRAC = 0.7  # below this share, idle at least 30% of the time: clearly not the limit


def worker_busy(cpu_pct: Sequence[float] | None, worker_cores: int | None) -> float | None:
    """The busiest worker's CPU as a share of the cores it is pinned to (1.0 = all of them)."""
    if not cpu_pct or not worker_cores:
        return None
    return max(cpu_pct) / (100.0 * worker_cores)


def transfer_limit(worker_busy: float | None, client_busy: float | None) -> str | None:
    """Whose CPU set the constant-batch ceiling: the client's when it was saturated (busy ≥ 85% of
    one core) while the worker was clearly not (idle at least 30% of the time); the worker's in
    the opposite case; otherwise unclear (both near full, as on a small host, or neither busy, as
    when latency sets the pace). None when either is unknown (a remote deployment)."""
    if worker_busy is None or client_busy is None:
        return None
    if client_busy >= BUSY_FRAC and worker_busy < SPARE_FRAC:
        return "client"
    if worker_busy >= BUSY_FRAC and client_busy < SPARE_FRAC:
        return "worker"
    return "unclear"


def busy_text(worker_busy: float | None, client_busy: float | None) -> str:
    return (f"the worker serving it was busy {worker_busy:.0%} of its cores and the client {client_busy:.0%} of a core"
            if worker_busy is not None and client_busy is not None else "")
