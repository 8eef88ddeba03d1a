"""The capacity plan: how many tf.data service workers and cores feed 1, 8 or N accelerators.

Pure arithmetic on measured rates (batches/s with their 95% intervals):

    demand(A)        = A × compute rate              (each accelerator running the step at its free-input rate)
    workers(A)       = ⌈demand / (per-worker rate × scaling efficiency)⌉
    conservative     = the same with the per-worker rate's lower 95% bound
    cores(A)         = workers × cores per worker
    clients(A)       = ⌈demand / transfer ceiling⌉   (trainer processes needed to receive that much)

The transfer ceiling is a constant batch sent through the service: no preprocessing, only the
service's own path (serialize, send, receive). It is the *client's* ceiling only when the client
was saturated while the worker serving it was clearly not; otherwise no verdict rests on it.

The per-worker rate is measured with one worker pinned to its own core(s). Scaling efficiency is
taken from counts of two or more workers that each had cores of their own (with one core left
for the client); when no such count could be run (a small host), linear scaling is assumed and
the plan says so. The service is *not worth it* when this host's own pipeline already feeds
every requested accelerator count, when adding workers clearly did not add throughput, or when
one client cannot even receive one accelerator's batches through the service.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipediag.analysis.modes import ModeSummary
from pipediag.analysis.scale_reasons import plan_assumptions, transfer_caution, worth_it
from pipediag.analysis.service_transfer import transfer_limit
from pipediag.analysis.service_transfer import worker_busy as worker_busy  # scale.py imports it from here
from pipediag.records.record import DictRecord

SCALING_MIN_EFFICIENCY = 0.7  # a worker added less than 70% of a worker: the limit is elsewhere

OWN_CORES = "own_cores"  # every worker has its own cores, and one core is left for the client
SHARES_CLIENT_CORES = "shares_client_cores"  # workers fill all cores: the client and step squeeze in
OVERSUBSCRIBED = "oversubscribed"  # more worker cores than the host has
UNPINNED = "unpinned"  # the OS could not pin workers to cores
REMOTE = "remote"  # an existing deployment: placement unknown


@dataclass(frozen=True)
class RateEstimate:
    batches_per_sec: float
    low: float | None = None  # 95% interval
    high: float | None = None

    @classmethod
    def of(cls, summary: ModeSummary | None) -> RateEstimate | None:
        if summary is None or not summary.batches_per_sec:
            return None
        ci = summary.batches_per_sec_ci
        return cls(summary.batches_per_sec, ci[0] if ci else None, ci[1] if ci else None)

    def scaled(self, factor: float) -> RateEstimate:
        return RateEstimate(
            self.batches_per_sec * factor,
            None if self.low is None else self.low * factor,
            None if self.high is None else self.high * factor,
        )


@dataclass(frozen=True)
class CountRate:
    """What one worker count delivered through the service (input only)."""

    workers: int | None  # None: a remote deployment of unknown size
    rate: RateEstimate | None


@dataclass(frozen=True)
class ScalingPoint:
    workers: int
    placement: str
    batches_per_sec: float | None
    efficiency: float | None  # rate / (workers × per-worker rate)
    efficiency_high: float | None  # its upper bound from the two 95% intervals


@dataclass(frozen=True)
class AcceleratorPlan:
    accelerators: int
    demand_batches_per_sec: float | None  # None: no compute rate
    local_keeps_up: bool | None  # this host's pipeline alone delivers the demand (lower 95% bound)
    workers: int | None
    workers_conservative: int | None
    cores: int | None
    cores_conservative: int | None
    clients: int | None  # trainer processes needed to receive the demand; None: transfer not measured


@dataclass(frozen=True)
class CapacityPlan:
    compute_batches_per_sec: float | None
    compute_source: str
    local_batches_per_sec: float | None
    per_worker_batches_per_sec: float | None
    per_worker_ci: tuple[float, float] | None
    per_worker_basis: str  # how it was measured, or why it is unknown
    worker_cores: int | None
    host_cores: int
    transfer_batches_per_sec: float | None
    transfer_limit: str | None  # client | worker | unclear: whose CPU set the constant-batch ceiling; None: unknown
    scaling: tuple[ScalingPoint, ...]
    scaling_checked: bool  # some count of >= 2 workers had cores of its own
    efficiency_used: float  # the efficiency the worker counts assume (1.0: linear)
    accelerators: tuple[AcceleratorPlan, ...]
    worth_it: str  # yes | not_needed | does_not_scale | transfer_bound | unknown
    reasons: tuple[str, ...]
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CapacityPlan:
        ci = d.get("per_worker_ci")
        return cls(**{
            **d,
            "per_worker_ci": None if ci is None else tuple(ci),
            "scaling": tuple(ScalingPoint(**p) for p in d.get("scaling", ())),
            "accelerators": tuple(AcceleratorPlan(**a) for a in d.get("accelerators", ())),
            "reasons": tuple(d.get("reasons", ())),
            "assumptions": tuple(d.get("assumptions", ())),
        })


def placement(workers: int, worker_cores: int | None, host_cores: int) -> str:
    """Where `workers` local workers of `worker_cores` cores each stand on a host of `host_cores`."""
    if not worker_cores:
        return UNPINNED
    used = workers * worker_cores
    if used <= host_cores - 1:
        return OWN_CORES
    if used <= host_cores:
        return SHARES_CLIENT_CORES
    return OVERSUBSCRIBED


def _ceil(x: float) -> int:
    return max(1, math.ceil(x - 1e-9))


def _per_worker(counts: Sequence[CountRate], remote: bool, remote_workers: int | None,
                worker_cores: int | None, host_cores: int) -> tuple[RateEstimate | None, str]:
    measured = [c for c in counts if c.rate is not None]
    if remote:
        if not measured:
            return None, "the service delivered no batches"
        if remote_workers is None:
            return None, ("unknown: the deployment's worker count is not known to a client "
                          "(give --remote-workers N to divide its rate among them)")
        return measured[0].rate.scaled(1 / remote_workers), (
            f"the deployment's rate divided by its {remote_workers} worker(s) (--remote-workers), assuming alike workers")
    if not measured:
        return None, "no worker count delivered batches"
    first = min(measured, key=lambda c: c.workers)
    cores = (f"pinned to {worker_cores} core{'s' if worker_cores != 1 else ''} each" if worker_cores
             else "not pinned to cores")
    where = placement(first.workers, worker_cores, host_cores)
    if first.workers == 1:
        basis = f"measured with 1 local worker, {cores.replace(' each', '')}"
    else:
        basis = f"{first.workers} local workers' rate divided evenly ({cores})"
    if where == SHARES_CLIENT_CORES:
        basis += "; it shared the host's cores with the client and the step, so it may be understated"
    elif where in (OVERSUBSCRIBED, UNPINNED):
        basis += "; its workers shared cores, so it understates a worker on cores of its own"
    return first.rate.scaled(1 / first.workers), basis


def plan_capacity(
    *,
    compute: RateEstimate | None,
    compute_source: str,
    local: RateEstimate | None,
    counts: Sequence[CountRate],
    transfer: RateEstimate | None,
    accelerators: Sequence[int],
    transfer_worker_busy: float | None = None,
    transfer_client_busy: float | None = None,
    worker_cores: int | None,
    host_cores: int,
    remote: bool = False,
    remote_workers: int | None = None,
) -> CapacityPlan:
    per_worker, basis = _per_worker(counts, remote, remote_workers, worker_cores, host_cores)
    limit = transfer_limit(transfer_worker_busy, transfer_client_busy)
    scaling = [] if remote or per_worker is None else _scaling_points(counts, per_worker, worker_cores, host_cores)
    checked = [p for p in scaling if p.workers >= 2 and p.placement == OWN_CORES and p.efficiency is not None]
    does_not_scale = [p for p in checked if p.efficiency_high is not None and p.efficiency_high < SCALING_MIN_EFFICIENCY]
    efficiency = min([1.0] + [p.efficiency for p in checked])
    plans = [_accelerator_plan(a, compute, local, per_worker, efficiency, transfer, worker_cores)
             for a in sorted(set(accelerators))]
    short_transfer = (compute is not None and transfer is not None and transfer.high is not None
                      and transfer.high < compute.batches_per_sec)
    worth, reasons = worth_it(compute, per_worker, basis, local, plans, does_not_scale, transfer,
                            client_limited=short_transfer and limit == "client")
    if short_transfer and worth != "transfer_bound":
        reasons.append(transfer_caution(limit, transfer, compute, transfer_worker_busy, transfer_client_busy))
    assumptions = plan_assumptions(compute_source, basis, checked, efficiency, remote, host_cores, worker_cores, plans,
                               transfer, limit, transfer_worker_busy, transfer_client_busy)
    return CapacityPlan(
        compute_batches_per_sec=None if compute is None else compute.batches_per_sec,
        compute_source=compute_source,
        local_batches_per_sec=None if local is None else local.batches_per_sec,
        per_worker_batches_per_sec=None if per_worker is None else per_worker.batches_per_sec,
        per_worker_ci=None if per_worker is None or per_worker.low is None else (per_worker.low, per_worker.high),
        per_worker_basis=basis,
        worker_cores=worker_cores,
        host_cores=host_cores,
        transfer_batches_per_sec=None if transfer is None else transfer.batches_per_sec,
        transfer_limit=limit,
        scaling=tuple(scaling),
        scaling_checked=bool(checked),
        efficiency_used=efficiency,
        accelerators=tuple(plans),
        worth_it=worth,
        reasons=tuple(reasons),
        assumptions=tuple(assumptions),
    )


def _scaling_points(counts: Sequence[CountRate], per_worker: RateEstimate, worker_cores: int | None,
                    host_cores: int) -> list[ScalingPoint]:
    """Each measured worker count's rate as a share of that many single workers (its efficiency)."""
    scaling: list[ScalingPoint] = []
    for c in sorted((c for c in counts if c.workers is not None), key=lambda c: c.workers):
        where = placement(c.workers, worker_cores, host_cores)
        eff = eff_high = None
        if c.rate is not None:
            eff = c.rate.batches_per_sec / (c.workers * per_worker.batches_per_sec)
            if c.rate.high is not None and per_worker.low:
                eff_high = c.rate.high / (c.workers * per_worker.low)
        scaling.append(ScalingPoint(c.workers, where, None if c.rate is None else c.rate.batches_per_sec, eff, eff_high))
    return scaling


def _accelerator_plan(a: int, compute: RateEstimate | None, local: RateEstimate | None,
                      per_worker: RateEstimate | None, efficiency: float, transfer: RateEstimate | None,
                      worker_cores: int | None) -> AcceleratorPlan:
    """The demand of `a` accelerators, whether this host keeps up, and the workers, cores and clients it takes."""
    demand = None if compute is None else a * compute.batches_per_sec
    keeps_up = None
    if demand is not None and local is not None:
        keeps_up = (local.low if local.low is not None else local.batches_per_sec) >= demand
    workers = conservative = None
    if demand is not None and per_worker is not None:
        workers = _ceil(demand / (per_worker.batches_per_sec * efficiency))
        if per_worker.low:
            conservative = _ceil(demand / (per_worker.low * efficiency))
    clients = None
    if demand is not None and transfer is not None:
        clients = _ceil(demand / transfer.batches_per_sec)
    k = worker_cores or None
    return AcceleratorPlan(
        accelerators=a,
        demand_batches_per_sec=demand,
        local_keeps_up=keeps_up,
        workers=workers,
        workers_conservative=conservative,
        cores=None if workers is None or k is None else workers * k,
        cores_conservative=None if conservative is None or k is None else conservative * k,
        clients=clients,
    )


@dataclass(frozen=True)
class Overhead(DictRecord):
    """The service's own cost, against running the pipeline locally."""

    _tuples = ("transfer_worker_cpu_pct",)  # from JSON's lists back to a tuple

    transfer_batches_per_sec: float | None  # a constant batch through the service: its ceiling per client
    transfer_workers: int | None  # workers serving that constant batch
    transfer_worker_cpu_pct: tuple[float, ...] | None  # their CPU during it; 100 = one core
    per_batch_ms: float | None  # 1000 / transfer rate: the service's cost per batch, all in
    transfer_mib_per_sec: float | None
    equal_cores_workers: int | None  # the worker count using all of this host's cores, as the local run could
    service_over_local: float | None  # that count's rate / the local pipeline's rate
    reason: str | None  # why service_over_local is None


def service_overhead(*, transfer: RateEstimate | None, transfer_workers: int | None, batch_bytes: int | None,
                     transfer_worker_cpu_pct: Sequence[float] | None = None,
                     local: RateEstimate | None, counts: Sequence[CountRate], worker_cores: int | None,
                     host_cores: int, remote: bool = False) -> Overhead:
    """The constant-batch ceiling, and the service against local execution on the same cores:
    the worker count whose pinned cores add up to the host's (the local run may use them all)."""
    per_batch = None if transfer is None else 1000.0 / transfer.batches_per_sec
    mib = None if transfer is None or not batch_bytes else transfer.batches_per_sec * batch_bytes / 2**20
    equal = ratio = None
    reason = None
    if remote:
        reason = "a remote deployment: the cores behind its workers are not known here"
    elif not worker_cores:
        reason = "workers were not pinned to cores, so no count used a known number of cores"
    elif host_cores % worker_cores:
        reason = f"no worker count uses exactly this host's {host_cores} cores at {worker_cores} per worker"
    else:
        equal = host_cores // worker_cores
        match = next((c for c in counts if c.workers == equal and c.rate is not None), None)
        if match is None:
            reason = f"{equal} worker(s) (all {host_cores} cores) was not among the measured counts"
        elif local is None:
            reason = "the local pipeline was not measured"
        else:
            ratio = match.rate.batches_per_sec / local.batches_per_sec
    return Overhead(
        transfer_batches_per_sec=None if transfer is None else transfer.batches_per_sec,
        transfer_workers=transfer_workers,
        transfer_worker_cpu_pct=None if transfer_worker_cpu_pct is None else tuple(transfer_worker_cpu_pct),
        per_batch_ms=per_batch,
        transfer_mib_per_sec=mib,
        equal_cores_workers=equal,
        service_over_local=ratio,
        reason=reason,
    )

