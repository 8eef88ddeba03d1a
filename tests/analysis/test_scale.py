"""The capacity plan's arithmetic and its decisions, on plain numbers."""

import pytest

from pipediag.analysis.scale import (
    OVERSUBSCRIBED,
    OWN_CORES,
    SHARES_CLIENT_CORES,
    UNPINNED,
    CapacityPlan,
    CountRate,
    RateEstimate,
    placement,
    plan_capacity,
    service_overhead,
)
from pipediag.analysis.service_transfer import transfer_limit, worker_busy


def rate(value, rel=0.05):
    return RateEstimate(value, value * (1 - rel), value * (1 + rel))


def plan(**overrides):
    args = dict(compute=rate(100.0), compute_source="synthetic mode", local=rate(40.0),
                counts=[CountRate(1, rate(25.0))], transfer=rate(1000.0), accelerators=[1, 8],
                worker_cores=1, host_cores=2)
    args.update(overrides)
    return plan_capacity(**args)


@pytest.mark.parametrize("workers,cores,host,expected", [
    (1, 1, 2, OWN_CORES), (2, 1, 2, SHARES_CLIENT_CORES), (4, 1, 2, OVERSUBSCRIBED),
    (2, 1, 3, OWN_CORES), (2, 2, 4, SHARES_CLIENT_CORES), (1, None, 2, UNPINNED),
])
def test_placement(workers, cores, host, expected):
    assert placement(workers, cores, host) == expected


def test_workers_cores_and_clients_per_accelerator_count():
    p = plan()
    one, eight = p.accelerators
    assert (one.accelerators, one.demand_batches_per_sec) == (1, 100.0)
    assert one.workers == 4  # 100 / 25 exactly: no rounding up past it
    assert one.workers_conservative == 5  # 100 / 23.75
    assert (one.cores, one.cores_conservative) == (4, 5)
    assert one.clients == 1
    assert eight.workers == 32 and eight.workers_conservative == 34 and eight.clients == 1
    assert one.local_keeps_up is False and eight.local_keeps_up is False
    assert p.worth_it == "yes"
    assert p.per_worker_batches_per_sec == 25.0 and p.per_worker_ci == pytest.approx((23.75, 26.25))


def test_cores_per_worker_multiply_the_cores():
    p = plan(worker_cores=2, host_cores=8, counts=[CountRate(1, rate(50.0))])
    assert p.accelerators[0].workers == 2 and p.accelerators[0].cores == 4


def test_clients_follow_the_transfer_ceiling():
    p = plan(transfer=rate(300.0))
    assert [a.clients for a in p.accelerators] == [1, 3]


def test_not_needed_when_this_host_feeds_every_count():
    p = plan(local=rate(1000.0))
    assert p.worth_it == "not_needed"
    assert all(a.local_keeps_up for a in p.accelerators)
    assert "1000.0 batches/s" in p.reasons[0] and "800.0 batches/s that 8 accelerator(s)" in p.reasons[0]


def test_local_keeping_up_needs_its_lower_bound_above_the_demand():
    assert plan(local=rate(102.0), accelerators=[1]).accelerators[0].local_keeps_up is False  # low 96.9
    assert plan(local=rate(110.0), accelerators=[1]).worth_it == "not_needed"  # low 104.5


def test_partly_local_says_where_the_service_starts():
    p = plan(local=rate(200.0))
    assert p.worth_it == "yes"
    assert any("cannot feed 8 accelerator(s)" in r for r in p.reasons)
    assert any("this host alone feeds 1 accelerator(s)" in r for r in p.reasons)


def test_scaling_on_own_cores_sets_the_efficiency_used():
    counts = [CountRate(1, rate(25.0)), CountRate(2, rate(40.0)), CountRate(4, rate(60.0))]
    p = plan(counts=counts, host_cores=8)
    assert p.scaling_checked
    assert [s.placement for s in p.scaling] == [OWN_CORES, OWN_CORES, OWN_CORES]
    assert p.efficiency_used == pytest.approx(0.6)
    assert p.worth_it == "does_not_scale"  # 4 workers: 60 / 100, at most 63/95 = 0.66 < 0.7


def test_efficiency_above_the_floor_enlarges_the_worker_count():
    counts = [CountRate(1, rate(25.0)), CountRate(2, rate(40.0))]  # 80%
    p = plan(counts=counts, host_cores=4)
    assert p.worth_it == "yes" and p.efficiency_used == pytest.approx(0.8)
    assert p.accelerators[0].workers == 5  # 100 / (25 * 0.8)
    assert any("efficiency 80%" in a for a in p.assumptions)


def test_noisy_low_efficiency_is_not_called_non_scaling():
    counts = [CountRate(1, rate(25.0, rel=0.3)), CountRate(2, rate(30.0, rel=0.3))]  # 60%, upper bound 119%
    assert plan(counts=counts, host_cores=4).worth_it == "yes"


def test_counts_that_share_cores_are_shown_but_not_judged():
    counts = [CountRate(1, rate(25.0)), CountRate(2, rate(26.0)), CountRate(4, rate(26.0))]
    p = plan(counts=counts, host_cores=2)
    assert not p.scaling_checked and p.efficiency_used == 1.0
    assert [s.placement for s in p.scaling] == [OWN_CORES, SHARES_CLIENT_CORES, OVERSUBSCRIBED]
    assert p.scaling[1].efficiency == pytest.approx(0.52)
    assert p.worth_it == "yes"
    assert any("NOT checked here" in a and "2 core(s)" in a for a in p.assumptions)


def test_transfer_bound_when_a_saturated_client_cannot_take_one_accelerators_batches():
    p = plan(transfer=rate(60.0), transfer_worker_busy=0.5, transfer_client_busy=0.95)
    assert p.worth_it == "transfer_bound" and p.transfer_limit == "client"
    assert "60.0 batches/s" in p.reasons[0]
    assert any("client's own ceiling" in a for a in p.assumptions)


@pytest.mark.parametrize("worker,client,limit", [(0.97, 0.5, "worker"), (0.95, 0.95, "unclear"),
                                                 (0.4, 0.5, "unclear"), (0.8, 0.95, "unclear"), (None, 0.95, None)])
def test_a_ceiling_that_cannot_be_put_on_the_client_only_cautions(worker, client, limit):
    p = plan(transfer=rate(60.0), transfer_worker_busy=worker, transfer_client_busy=client)
    assert p.worth_it == "yes" and p.transfer_limit == limit
    caution = next(r for r in p.reasons if r.startswith("caution: a constant batch reached only 60.0 batches/s"))
    if limit == "unclear":
        expected = "near full" if worker > 0.7 else "latency"
    else:
        expected = {"worker": "more workers may raise it", None: "cannot be seen from here"}[limit]
    assert expected in caution


def test_a_fast_enough_transfer_path_adds_no_caution():
    p = plan(transfer=rate(500.0), transfer_worker_busy=0.97, transfer_client_busy=0.5)
    assert p.transfer_limit == "worker" and not any("caution" in r for r in p.reasons)
    assert any("upper bound" in a for a in p.assumptions)


@pytest.mark.parametrize("worker,client,expected", [
    (0.5, 0.9, "client"), (0.9, 0.5, "worker"), (0.9, 0.9, "unclear"), (0.5, 0.5, "unclear"),
    (0.75, 0.93, "unclear"),  # a worker near full too: on the 2-core machine, worker 75-88% and client ~93%
    (0.93, 0.75, "unclear"), (None, 0.9, None), (0.5, None, None),
])
def test_transfer_limit(worker, client, expected):
    assert transfer_limit(worker, client) == expected


def test_per_worker_rate_from_the_smallest_count_when_one_was_not_run():
    p = plan(counts=[CountRate(2, rate(50.0))], host_cores=4)
    assert p.per_worker_batches_per_sec == 25.0
    assert "2 local workers' rate divided evenly" in p.per_worker_basis


def test_remote_needs_its_worker_count_for_a_per_worker_rate():
    unknown = plan(counts=[CountRate(None, rate(80.0))], remote=True, worker_cores=None)
    assert unknown.worth_it == "unknown" and unknown.per_worker_batches_per_sec is None
    assert "--remote-workers" in unknown.reasons[0]
    assert unknown.accelerators[0].workers is None
    known = plan(counts=[CountRate(None, rate(80.0))], remote=True, remote_workers=4, worker_cores=None)
    assert known.per_worker_batches_per_sec == 20.0 and known.accelerators[0].workers == 5
    assert known.scaling == ()


def test_without_a_compute_rate_nothing_is_planned():
    p = plan(compute=None)
    assert p.worth_it == "unknown" and p.accelerators[0].demand_batches_per_sec is None
    assert p.accelerators[0].workers is None


def test_plan_round_trips_through_a_dict():
    p = plan(counts=[CountRate(1, rate(25.0)), CountRate(2, rate(40.0))], host_cores=4)
    assert CapacityPlan.from_dict(p.to_dict()) == p


def test_service_overhead_compares_the_count_that_uses_all_cores():
    counts = [CountRate(1, rate(25.0)), CountRate(2, rate(48.0))]
    o = service_overhead(transfer=rate(500.0), transfer_workers=1, batch_bytes=2**20, local=rate(60.0),
                         counts=counts, worker_cores=1, host_cores=2)
    assert o.per_batch_ms == pytest.approx(2.0) and o.transfer_mib_per_sec == pytest.approx(500.0)
    assert o.equal_cores_workers == 2 and o.service_over_local == pytest.approx(0.8)
    missing = service_overhead(transfer=None, transfer_workers=None, batch_bytes=None, local=rate(60.0),
                               counts=counts[:1], worker_cores=1, host_cores=2)
    assert missing.service_over_local is None and "was not among the measured counts" in missing.reason
    remote = service_overhead(transfer=rate(500.0), transfer_workers=None, batch_bytes=None, local=rate(60.0),
                              counts=[CountRate(None, rate(80.0))], worker_cores=None, host_cores=2, remote=True)
    assert remote.service_over_local is None and "remote" in remote.reason


def test_worker_busy_is_the_busiest_worker_over_its_cores():
    assert worker_busy((50.0, 180.0), 2) == pytest.approx(0.9)
    assert worker_busy(None, 1) is None and worker_busy((90.0,), None) is None
