"""The scale report rendered to an in-memory console of fixed width."""

from pipediag.analysis.scale import CountRate, RateEstimate, plan_capacity, service_overhead
from pipediag.analysis.visitation import visitation
from pipediag.records.element import ElementInfo, Leaf
from pipediag.records.readings import SampleLog
from pipediag.records.service import ServerInfo, Shutdown
from pipediag.records.stage import Stage
from pipediag.records.step import StepInfo
from pipediag.report.terminal.scale import measured_table, render_scale
from pipediag.results.scale import CountResult, ScaleResult, ServiceInfo
from tests.report.test_terminal import text
from tests.summaries import environment, summary

STAGES = (Stage(0, "n0", "TensorSliceDataset", "source"), Stage(1, "n1", "MapDataset", "map", function="decode"),
          Stage(2, "n2", "BatchDatasetV2", "batch", buffer_size=32))


def result(status="complete", shutdown=None):
    modes = {"synthetic": summary("synthetic", 300.0), "local_input_only": summary("input_only", 60.0),
             "transfer": summary("input_only", 220.0)}
    counts = (
        CountResult(1, "own_cores", summary("input_only", 48.0), summary("pipeline", 47.5), worker_cpu_pct=(94.0,)),
        CountResult(2, "shares_client_cores", summary("input_only", 70.0), summary("pipeline", 55.0),
                    worker_cpu_pct=(75.0, 73.0)),
    )
    rates = [CountRate(c.workers, RateEstimate.of(c.input_only)) for c in counts]
    plan = plan_capacity(compute=RateEstimate.of(modes["synthetic"]), compute_source="synthetic mode on CPU",
                         local=RateEstimate.of(modes["local_input_only"]), counts=rates,
                         transfer=RateEstimate(900.0, 880.0, 920.0), accelerators=(1, 8), worker_cores=1, host_cores=2)
    overhead = service_overhead(transfer=RateEstimate.of(modes["transfer"]), transfer_workers=1, batch_bytes=2**20,
                                local=RateEstimate.of(modes["local_input_only"]), counts=rates, worker_cores=1,
                                host_cores=2)
    servers = (ServerInfo("dispatcher", 10, 40001, (0, 1), False, 2.1), ServerInfo("worker", 11, 40002, (0,), True, 2.5),
               ServerInfo("worker", 12, 40003, (1,), True, 2.6))
    shutdown = shutdown or Shutdown(1.3, {"worker 11": "clean", "worker 12": "clean", "dispatcher 10": "clean"}, (), ())
    return ScaleResult(
        status=status, target="data.py:make_dataset", step=StepInfo("standin", "stand-in model (an MLP)"),
        environment=environment(),
        element=ElementInfo((Leaf("[0]", "dense", "float32", (None, 8)),), batch_size=32, batch_bytes=2**20),
        cardinality="infinite", stages=STAGES,
        service=ServiceInfo("local", "grpc://127.0.0.1:40001", "parallel_epochs", servers, shutdown),
        modes=modes, runs={}, counts=counts, overhead=overhead, plan=plan,
        visitation=visitation("parallel_epochs", 2, "infinite", STAGES), samples=SampleLog(interval_s=0.1, samples=()),
        settings={"worker_cores": 1, "host_cores": 2, "processing_mode": "parallel_epochs"}, elapsed_s=30.0,
    )


def test_measured_rows_per_worker_count():
    out = text(measured_table(result()), width=100)
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in out.splitlines() if line.startswith("│")}
    assert rows["synthetic (free input)"][0] == "300.0"
    assert rows["local, no service"][0] == "60.0"
    assert rows["service, constant batch"][0] == "220.0"
    assert rows["1 worker: input"][:5] == ["48.0", "1.4", "48.0", "100%", "94%"]
    assert rows["2 workers: input"][2:5] == ["35.0", "73%", "75% 73%"]
    assert rows["2 workers: input"][-1] == "shared"
    assert rows["2 workers: step fed"][0] == "55.0"
    assert "…" not in out  # nothing cut at 100 columns


def test_full_report_has_overhead_plan_assumptions_visitation_and_shutdown():
    out = text(render_scale(result()), width=140)
    assert "pipediag scale data.py:make_dataset" in out
    assert "local: a dispatcher and up to 2 worker processes on 127.0.0.1 (grpc://127.0.0.1:40001, 1 core each, pinned)" in out
    assert "220.0 batches/s = 4.55 ms per batch, 220 MiB/s" in out
    assert "the service delivered 1.17x the local rate" in out
    assert "tf.data service: WORTH IT" in out
    assert "this host's own pipeline (60.0 batches/s) cannot feed 1, 8 accelerator(s)" in out
    assert "NOT checked here" in out
    assert "Data visitation (parallel_epochs)" in out and "does not shuffle" in out
    assert "3 process(es) stopped in 1.3 s (all ended cleanly); no process left, no port left listening" in out
    plan_rows = [line for line in out.splitlines() if line.strip().startswith(("│            1", "│            8"))]
    assert len(plan_rows) == 2
    assert plan_rows[0].split()[1:8] == ["1", "300.0", "too", "slow", "7", "7", "7"]


def test_unclean_shutdown_and_interruption_are_loud():
    bad = Shutdown(12.0, {"worker 11": "killed", "dispatcher 10": "clean"}, (11,), (40002,))
    out = text(render_scale(result(status="interrupted", shutdown=bad)), width=140)
    assert "[INTERRUPTED: partial report]" in out
    assert "worker 11 killed" in out and "processes STILL ALIVE: 11" in out and "ports STILL LISTENING: 40002" in out
