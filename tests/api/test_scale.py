"""`pipediag.scale()` end to end with real local tf.data service processes (kept short)."""

import psutil
import pytest

from pipediag.api.scale import default_workers, plan_cores, scale
from pipediag.errors import UsageError
from pipediag.records.container import ContainerLimits
from pipediag.records.run import StopRule
from pipediag.results.scale import ScaleResult
from pipediag.service.cluster import LocalCluster, alive, listening
from tests.fixtures import pipelines

QUICK = StopRule(max_seconds=1.0, min_seconds=0.3, min_steps=5, warmup_steps=2)


def no_children():
    return [c for c in psutil.Process().children(recursive=True) if alive(c.pid)] == []


def test_default_workers_are_powers_of_two_within_the_cores():
    assert default_workers(1, 2) == (1, 2)
    assert default_workers(1, 8) == (1, 2, 4, 8)
    assert default_workers(2, 6) == (1, 2)
    assert default_workers(4, 2) == (1,)


def test_the_plan_counts_the_whole_cores_a_container_allows():
    limits = ContainerLimits(host_cores=64, affinity_cores=64, cpuset_cores=None, quota_cores=2.5, quota_reason=None,
                             cgroup="v2", memory_limit_bytes=None, memory_reason="no memory limit")
    assert plan_cores(64, limits) == 2  # a third worker would share the quota, not have a core of its own
    assert default_workers(1, plan_cores(64, limits)) == (1, 2)
    assert plan_cores(64, ContainerLimits(**{**limits.__dict__, "quota_cores": 0.5})) == 1
    assert plan_cores(16, ContainerLimits(**{**limits.__dict__, "quota_cores": None, "quota_reason": "none"})) == 16


@pytest.mark.slow
def test_local_service_is_measured_planned_and_stopped():
    result = scale(pipelines.in_memory, step=pipelines.light_step(), workers=(1,), stop_rule=QUICK,
                   accelerators=(1, 4))
    assert result.status == "complete"
    assert set(result.modes) == {"synthetic", "local_input_only", "transfer"}
    (count,) = result.counts
    assert count.workers == 1 and count.input_only.steps >= 5 and count.fed.steps >= 5
    assert count.worker_cpu_pct is not None and len(count.worker_cpu_pct) == 1
    assert result.service.kind == "local" and result.service.target.startswith("grpc://127.0.0.1:")
    assert [s.role for s in result.service.servers] == ["dispatcher", "worker"]
    shutdown = result.service.shutdown
    assert shutdown.clean and shutdown.leftover_pids == () and shutdown.leftover_ports == ()
    assert no_children()
    assert listening({s.port for s in result.service.servers})[0] == ()
    plan = result.plan
    assert [a.accelerators for a in plan.accelerators] == [1, 4]
    assert plan.per_worker_batches_per_sec == pytest.approx(count.input_only.batches_per_sec)
    assert plan.compute_batches_per_sec == pytest.approx(result.modes["synthetic"].batches_per_sec)
    assert "there is no accelerator here" in plan.assumptions[0]
    assert result.overhead.transfer_workers == 1 and result.overhead.per_batch_ms > 0
    assert any("parallel_epochs" in line for line in result.visitation)
    again = ScaleResult.from_dict(result.to_dict())
    assert again.to_dict() == result.to_dict()


def test_py_function_pipeline_is_refused_before_any_server_starts():
    with pytest.raises(UsageError, match="map\\(slow_read\\)"):
        scale(pipelines.serial_sleep_map, step=pipelines.light_step(), workers=(1,), stop_rule=QUICK)
    assert no_children()


def test_a_pipeline_over_the_graph_limit_is_refused_with_the_way_to_send_it(monkeypatch):
    """Workers rebuild the pipeline from its graph: one over 2 GiB (here over a lowered limit) cannot be sent."""
    from pipediag.builder import objects

    monkeypatch.setattr(objects, "GRAPHDEF_LIMIT_BYTES", 1 << 20)
    with pytest.raises(UsageError, match="cannot be sent to tf.data service workers: the pipeline holds 2.0 MiB") as info:
        scale(pipelines.in_memory, step=pipelines.light_step(), workers=(1,), stop_rule=QUICK)
    assert "Dataset.save(path)" in info.value.hint
    assert no_children()


class _FailInService:
    """A progress callback that fails once the service is running: an error mid-run."""

    def phase(self, text):
        if text == "1w input mode":
            raise RuntimeError("boom while the service runs")

    def mode(self, *args):
        pass


@pytest.mark.slow
def test_an_error_while_the_service_runs_stops_every_server():
    with pytest.raises(RuntimeError, match="boom"):
        scale(pipelines.in_memory, step=pipelines.light_step(), workers=(1,), stop_rule=QUICK,
              progress=_FailInService())
    assert no_children()


@pytest.mark.slow
def test_remote_service_is_used_and_left_running():
    with LocalCluster() as deployment:
        deployment.add_workers(1)
        result = scale(pipelines.in_memory, step=pipelines.light_step(), service=deployment.target,
                       remote_workers=1, stop_rule=QUICK, accelerators=(1,))
        assert all(alive(s.pid) for s in deployment.servers)  # not pipediag's to stop
    assert result.service.kind == "remote" and result.service.servers == () and result.service.shutdown is None
    (count,) = result.counts
    assert count.workers is None and count.placement == "remote"
    assert count.worker_cpu_pct is None and "remote" in count.worker_cpu_reason
    assert result.plan.per_worker_batches_per_sec == pytest.approx(count.input_only.batches_per_sec)
    assert result.settings["workers"] is None and result.settings["remote_workers"] == 1


@pytest.mark.parametrize("kwargs,match", [
    (dict(service="grpc://x:1", workers=(1,)), "--workers starts local workers"),
    (dict(remote_workers=2), "--remote-workers describes"),
    (dict(processing_mode="off"), "unknown processing mode"),
    (dict(worker_cores=64), "--worker-cores 64"),
    (dict(service="nonsense"), "not a tf.data service address"),
    (dict(workers=(0,)), "must be positive"),
])
def test_bad_options_are_usage_errors(kwargs, match):
    with pytest.raises(UsageError, match=match):
        scale(pipelines.in_memory, **kwargs)


def test_an_unreachable_dispatcher_fails_before_anything_is_built():
    import socket

    from pipediag.service.cluster import ServiceError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    built = []

    def builder():
        built.append(True)
        return pipelines.in_memory()

    with pytest.raises(ServiceError, match="cannot reach the tf.data service dispatcher"):
        scale(builder, service=f"grpc://127.0.0.1:{port}", stop_rule=QUICK)
    assert built == []


@pytest.mark.parametrize("framework, gpus, on_gpu", [("jax", 1, True), ("torch", 1, True), ("jax", 0, False),
                                                     ("tensorflow", 1, False), (None, 1, False)])
def test_a_jax_or_torch_step_counts_as_on_the_gpu_when_nvml_sees_one(framework, gpus, on_gpu):
    # Seen on the H200: a JAX step on the GPU was said to run "on this host's CPU" (TensorFlow's
    # CPU build saw no GPU), and the plan asked for --compute-rate.
    from pipediag.api.scale import _step_on_gpu
    from pipediag.api.scale_measure import ScaleRun as _Run
    from pipediag.backends.fake_nvml import FakeGpu, FakeNvml
    from pipediag.records.step import StepInfo
    from pipediag.samples.environment import collect
    from pipediag.steps.step import Observed, Step

    env = collect(with_tensorflow=False, nvml_lib=FakeNvml([FakeGpu() for _ in range(gpus)]))
    step = Step(run=lambda b: None, info=StepInfo("user", "s"), observed=lambda: Observed(framework, None))
    assert _step_on_gpu(_Run("t", environment=env, step=step)) is on_gpu


def test_the_plan_takes_one_devices_appetite_from_a_step_on_several():
    from pipediag.analysis.scale import RateEstimate, plan_capacity
    from pipediag.api.scale import _per_device_appetite
    from pipediag.api.scale_measure import ScaleRun as _Run
    from pipediag.backends.fake_nvml import FakeGpu, FakeNvml
    from pipediag.records.step import StepInfo
    from pipediag.samples.environment import collect
    from pipediag.steps.step import Observed, Step

    env = collect(with_tensorflow=False, nvml_lib=FakeNvml([FakeGpu() for _ in range(4)]))
    devices = ("cpu:0", "gpu:0", "gpu:1", "gpu:2", "gpu:3")  # a host scalar beside the four GPUs' results
    step = Step(run=lambda b: None, info=StepInfo("user", "s"), observed=lambda: Observed("jax", None, devices))
    compute, source = _per_device_appetite(_Run("t", environment=env, step=step), RateEstimate(200.0, 190.0, 210.0))
    assert compute == RateEstimate(50.0, 47.5, 52.5)
    assert source.startswith("the step with free input (synthetic mode) on this host's 4 GPUs (gpu:0–gpu:3): "
                             "200.0 global batches/s together, / 4 = one device's appetite")
    plan = plan_capacity(compute=compute, compute_source=source, local=RateEstimate(300.0, 290.0, 310.0), counts=[],
                         transfer=None, accelerators=(1, 8), worker_cores=1, host_cores=16)
    assert [p.demand_batches_per_sec for p in plan.accelerators] == [50.0, 400.0]
    assert [p.local_keeps_up for p in plan.accelerators] == [True, False]
    one = Step(run=lambda b: None, info=StepInfo("user", "s"), observed=lambda: Observed("jax", None, ("gpu:0",)))
    assert _per_device_appetite(_Run("t", environment=env, step=one), RateEstimate(200.0))[0] == RateEstimate(200.0)
