"""Why the capacity plan says what it says: whether the service is worth it, the transfer caution, the assumptions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipediag.analysis.service_transfer import SPARE_FRAC, busy_text

if TYPE_CHECKING:
    from pipediag.analysis.scale import AcceleratorPlan, RateEstimate, ScalingPoint


def worth_it(compute: RateEstimate | None, per_worker: RateEstimate | None, basis: str, local: RateEstimate | None,
           plans: list[AcceleratorPlan], does_not_scale: list[ScalingPoint], transfer: RateEstimate | None, *,
           client_limited: bool) -> tuple[str, list[str]]:
    """Whether the service is worth it (unknown, not_needed, does_not_scale, transfer_bound, yes), with the reasons."""
    reasons: list[str] = []
    if compute is None:
        worth = "unknown"
        reasons.append("no compute rate: the step was not measured with free input")
    elif per_worker is None:
        worth = "unknown"
        reasons.append(f"no per-worker rate: {basis}")
    elif local is not None and plans and all(p.local_keeps_up for p in plans):
        worth = "not_needed"
        largest = plans[-1]
        reasons.append(
            f"this host's own pipeline delivers {local.batches_per_sec:.1f} batches/s, at least the "
            f"{largest.demand_batches_per_sec:.1f} batches/s that {largest.accelerators} accelerator(s) take: "
            "the service would add machines and a network hop, not speed"
        )
    elif does_not_scale:
        worth = "does_not_scale"
        worst = min(does_not_scale, key=lambda p: p.efficiency)
        reasons.append(
            f"{worst.workers} workers, each on cores of its own, delivered {worst.batches_per_sec:.1f} batches/s = "
            f"{worst.efficiency:.0%} of {worst.workers} × the single worker's rate (at most {worst.efficiency_high:.0%}): "
            "adding workers does not add throughput, so the limit is not the workers' CPU (the client, the dispatcher "
            "or the network)"
        )
    elif client_limited:
        worth = "transfer_bound"
        reasons.append(
            f"one client received at most {transfer.batches_per_sec:.1f} batches/s through the service even with "
            f"a constant batch, less than one accelerator takes ({compute.batches_per_sec:.1f}): "
            "no worker count helps; fewer bytes per batch (e.g. uint8 images, converted on the accelerator) "
            "or several clients would"
        )
    else:
        worth = "yes"
        short = [p for p in plans if p.local_keeps_up is False]
        if local is None:
            reasons.append("this host's own pipeline was not measured")
        elif short:
            reasons.append(
                f"this host's own pipeline ({local.batches_per_sec:.1f} batches/s) cannot feed "
                + ", ".join(str(p.accelerators) for p in short) + " accelerator(s)"
            )
        fed = [p for p in plans if p.local_keeps_up]
        if fed:
            reasons.append("this host alone feeds " + ", ".join(str(p.accelerators) for p in fed)
                           + " accelerator(s): the service is needed only beyond that")
    return worth, reasons


def transfer_caution(limit: str | None, transfer: RateEstimate, compute: RateEstimate,
                      transfer_worker_busy: float | None, transfer_client_busy: float | None) -> str:
    """The caution when a constant batch through the service is slower than one accelerator takes."""
    if limit == "worker":
        who = "the worker serving it was the saturated one, so more workers may raise it"
    elif limit is None:
        who = "whose limit that is cannot be seen from here"
    elif min(transfer_worker_busy, transfer_client_busy) >= SPARE_FRAC:
        who = "the worker and the client were both near full, so it cannot be told whose limit that is"
    else:
        who = "neither the worker nor the client was saturated (latency may set the pace)"
    return (
        f"caution: a constant batch reached only {transfer.batches_per_sec:.1f} batches/s through the service, "
        f"less than one accelerator takes ({compute.batches_per_sec:.1f}); {who}: measure the service path "
        "on the real hosts"
    )


def plan_assumptions(compute_source: str, basis: str, checked: list[ScalingPoint], efficiency: float, remote: bool,
                 host_cores: int, worker_cores: int | None, plans: list[AcceleratorPlan],
                 transfer: RateEstimate | None, limit: str | None, transfer_worker_busy: float | None,
                 transfer_client_busy: float | None) -> list[str]:
    """What the plan assumes: the rates it rests on, the scaling, and the client's ceiling."""
    assumptions = [
        f"compute rate: {compute_source}",
        f"per-worker rate: {basis}; remote workers are assumed to have cores like this host's",
        "demand: accelerators × compute rate, every accelerator running the step at its free-input rate",
    ]
    if checked:
        assumptions.append(
            "scaling: measured with up to " + str(max(p.workers for p in checked))
            + f" workers on cores of their own; worker counts assume efficiency {efficiency:.0%}"
        )
    elif not remote:
        assumptions.append(
            f"scaling: linear in workers, NOT checked here: on this host ({host_cores} core(s), "
            f"{worker_cores or 'unpinned'} per worker, one left for the client and the step) no count of 2 or more "
            "workers had cores of its own; counts that shared cores are shown but bounded by the cores"
        )
    if any(p.workers_conservative is not None for p in plans):
        assumptions.append("conservative counts use the per-worker rate's lower 95% bound")
    if transfer is not None:
        line = (f"client: one trainer process received at most {transfer.batches_per_sec:.1f} batches/s through "
                "the service (a constant batch, loopback)")
        busy = busy_text(transfer_worker_busy, transfer_client_busy)
        if limit == "client":
            line += f"; {busy}: the client's own ceiling, and a network is slower, so the clients counts are a floor"
        elif limit == "worker":
            line += f"; {busy}: the worker may have been the limit, so the clients counts are an upper bound"
        elif limit == "unclear":
            line += f"; {busy}: whose ceiling it is cannot be told on this host"
        else:
            line += "; a network is slower, so the clients counts are a floor"
        assumptions.append(line)
    return assumptions
