"""The container's CPU and memory limits in the verdict, the fixes and the tuning rules, on
scripted numbers: no cgroup, no TensorFlow."""

from dataclasses import replace

from pipediag.analysis.modes import InputSideCpu, summarize, within_limit
from pipediag.fixes.cpu import cores_needed
from pipediag.fixes.recommend import recommend
from pipediag.records.container import ContainerLimits, ThrottleCounters, Throttling
from pipediag.records.readings import CpuReading, Sample, SampleLog
from pipediag.records.run import ModeRun
from pipediag.tuner.rules import TuningFacts, threading_change
from pipediag.verdict import thresholds as T
from pipediag.verdict.rules import classify_cpu, decide
from tests.summaries import GiB, summary, waiting_cpu

QUOTA_1_OF_2 = ContainerLimits(host_cores=2, affinity_cores=2, cpuset_cores=2, quota_cores=1.0, quota_reason=None,
                               cgroup="v1", memory_limit_bytes=None, memory_reason="no memory limit",
                               host_memory_bytes=24 * GiB, quota_us=100000, period_us=100000,
                               cpu_stat_path="/sys/fs/cgroup/cpu/x/cpu.stat")
QUOTA_2_OF_64 = replace(QUOTA_1_OF_2, host_cores=64, affinity_cores=64, cpuset_cores=64, quota_cores=2.0,
                        quota_us=200000)
HOST = replace(QUOTA_1_OF_2, quota_cores=None, quota_reason="no CPU quota", cpu_stat_path=None,
               throttle_reason="no CPU quota: nothing throttles")


def throttled(frac, periods=100):
    return Throttling(periods=periods, throttled_periods=round(frac * periods), throttled_s=4.2, span_s=9.8,
                      quota_cores=1.0)


def limited(m, container=QUOTA_1_OF_2, frac=None):
    return replace(m, effective_cores=container.effective_cores,
                   throttling=None if frac is None else throttled(frac),
                   cpu_while_waiting=None if m.cpu_while_waiting is None
                   else replace(m.cpu_while_waiting, effective_cores=container.effective_cores))


def input_bound(frac_pipeline=0.63, frac_synthetic=0.0, container=QUOTA_1_OF_2):
    # The pipeline alone cannot keep up; this process used its one allowed core while the step waited.
    waiting = waiting_cpu([60, 40], process=97.0)
    return {
        "synthetic": limited(summary("synthetic", 200, per_core=[50, 10], process=55.0), container, frac_synthetic),
        "pipeline": limited(summary("pipeline", 50, wait=0.7, per_core=[60, 40], process=97.0, waiting=waiting),
                            container, frac_pipeline),
        "input_only": limited(summary("input_only", 52, per_core=[60, 40], process=98.0), container, 0.8),
        "tuned": None,
    }


def test_one_core_busy_under_a_one_core_quota_is_saturated_not_a_serial_stage():
    waiting = waiting_cpu([60, 40], process=97.0)
    on_host = classify_cpu(InputSideCpu(waiting, "while the step waited"))
    in_quota = classify_cpu(InputSideCpu(replace(waiting, effective_cores=1.0), "while the step waited"))
    assert on_host.kind == "one_core"  # on the whole host, one core of two: a serial stage
    assert in_quota.kind == "saturated"
    assert "this process 1.0 of the 1 core it may use (the host has 2)" in in_quota.text


def test_throttling_evidence_names_the_quota_not_the_hosts_cores():
    v = decide(input_bound(), container=QUOTA_1_OF_2)
    assert v.bottleneck == "input" and v.cpu_pattern.kind == "saturated"
    line = next(e for e in v.evidence if e.startswith("throttled"))
    assert line.startswith("throttled 63% of periods in pipeline mode (63 of 100; 4.2 s throttled")
    assert line.endswith(": the container's CPU quota (1.0 cores), not the host's 2, limits the pipeline")
    assert v.facts["throttled_mode"] == "pipeline" and v.facts["effective_cores"] == 1.0


def test_the_step_hitting_the_quota_alone_is_said_too():
    v = decide(input_bound(frac_synthetic=0.5), container=QUOTA_1_OF_2)
    assert any("the step alone hit it too (50% in synthetic mode, with free input)" in e for e in v.evidence)


def test_throttling_under_the_line_is_named_as_not_holding_the_run_back():
    below = T.THROTTLED_FRAC - 0.05
    v = decide(input_bound(frac_pipeline=below), container=QUOTA_1_OF_2)
    # input_only (0.8) still ran at the quota: that mode is named instead
    assert v.facts["throttled_mode"] == "input_only"
    modes = input_bound(frac_pipeline=below)
    modes["input_only"] = replace(modes["input_only"], throttling=throttled(below))
    quiet = decide(modes, container=QUOTA_1_OF_2)
    assert "throttled_mode" not in quiet.facts
    assert any("throttled in only 20% of periods in pipeline mode, under the 25% line" in e for e in quiet.evidence)


def test_no_container_lines_when_the_host_is_all_there_is():
    modes = input_bound(container=HOST)
    assert not any("quota" in e or "throttled" in e for e in decide(modes, container=HOST).evidence)
    assert decide(modes).evidence == decide(modes, container=HOST).evidence


def test_cores_idle_on_the_host_are_not_idle_for_a_quota_that_is_used_up():
    # The step is 1.4x slower beside the pipeline while 62 of 64 host cores sit idle. On the host
    # that is not contention (the cores were free); under a 2-core quota that this process used
    # whole, the pipeline and the step did compete: for the quota.
    per_core = [100, 100] + [0] * 62
    synthetic = summary("synthetic", 100, compute_ms=10.0)
    pipeline = summary("pipeline", 70, wait=0.01, compute_ms=14.0, per_core=per_core, process=199.0)
    on_host = decide({"synthetic": synthetic, "pipeline": pipeline, "input_only": summary("input_only", 200)})
    assert any("cores were idle: not CPU contention" in e for e in on_host.evidence)
    in_quota = decide({"synthetic": limited(synthetic, QUOTA_2_OF_64),
                       "pipeline": limited(pipeline, QUOTA_2_OF_64, 0.9),
                       "input_only": limited(summary("input_only", 200), QUOTA_2_OF_64)}, container=QUOTA_2_OF_64)
    assert in_quota.bottleneck == "input" and in_quota.headline.startswith("input-bound through CPU contention")
    assert any(e.endswith("the container's CPU quota (2.0 cores), not the host's 64, limits the pipeline")
               for e in in_quota.evidence)


def test_the_quota_fix_raises_it_with_the_cores_the_step_needs():
    modes = input_bound()
    v = decide(modes, container=QUOTA_1_OF_2)
    fixes = recommend(v, modes, [], gpu_present=False, container=QUOTA_1_OF_2,
                      scale_command="pipediag scale data.py:make --workers 1,2").fixes
    fix = next(f for f in fixes if f.kind == "cpu_quota")
    # the step's 0.55 cores + 0.98 cores / 52 batches/s x 200 batches/s = 4.3 cores
    assert abs(cores_needed(modes) - (0.55 + 0.98 / 52 * 200)) < 1e-9
    assert "about 4.3 cores" in fix.basis and "docker run --cpus=5" in fix.code
    assert "pipediag scale data.py:make --workers 1,2" in fix.code
    assert fix.basis.startswith("not measured: throttled 63% of periods in pipeline mode")
    assert "more than this host's 2 cores: only tf.data service" in fix.basis and "lower bound" not in fix.basis
    capped = input_bound(frac_synthetic=0.9)
    basis = next(f for f in recommend(decide(capped, container=QUOTA_1_OF_2), capped, [], gpu_present=False,
                                      container=QUOTA_1_OF_2).fixes if f.kind == "cpu_quota").basis
    assert "takes at least about 4.3 cores" in basis and "a lower bound: the quota capped the step itself" in basis


def test_the_quota_fix_sizes_tf_data_to_the_quota_never_above_it():
    modes = input_bound(container=QUOTA_2_OF_64)
    v = decide(modes, container=QUOTA_2_OF_64)
    code = next(f for f in recommend(v, modes, [], gpu_present=False, container=QUOTA_2_OF_64).fixes
                if f.kind == "cpu_quota").code
    assert "not to the 64 cores TensorFlow sees" in code
    assert "options.autotune.cpu_budget = 2" in code and "options.threading.private_threadpool_size = 2" in code


def test_no_quota_fix_without_throttling():
    modes = input_bound(frac_pipeline=0.1)
    modes["input_only"] = replace(modes["input_only"], throttling=throttled(0.1))
    v = decide(modes, container=QUOTA_1_OF_2)
    assert not any(f.kind == "cpu_quota" for f in recommend(v, modes, [], gpu_present=False,
                                                           container=QUOTA_1_OF_2).fixes)


def test_no_threading_advice_above_the_cores_a_container_allows():
    facts = TuningFacts(cores=64, ram_budget_bytes=GiB, fill_budget_seconds=10.0, latency_bound=True)
    assert threading_change(facts).applied  # latency-bound reads on the host's 64 cores: 32 threads
    limited_facts = replace(facts, cores=1, cpu_limit="the container's CPU quota (1.0 cores), not the host's 2")
    change = threading_change(limited_facts)
    assert not change.applied
    assert change.reason.startswith("the container's CPU quota (1.0 cores), not the host's 2: more threads than the 1")
    # ...and so no threading fix is recommended from it
    v = decide(input_bound(), container=QUOTA_1_OF_2)
    fixes = recommend(v, input_bound(), [change], gpu_present=False, container=QUOTA_1_OF_2).fixes
    assert not any(f.kind == "threading" for f in fixes)


def test_the_container_memory_limit_is_the_memory_line():
    limit = replace(QUOTA_1_OF_2, memory_limit_bytes=4 * GiB, memory_reason=None)
    modes = input_bound()
    modes["pipeline"] = replace(modes["pipeline"], rss_max_bytes=int(3.9 * GiB))
    v = decide(modes, container=limit)
    assert v.bottleneck == "memory" and v.headline.startswith("the container's memory limit is nearly reached")
    assert "97% of the container's memory limit of 4.00 GiB (the host has 24.00 GiB)" in v.evidence[0]
    assert decide(modes, container=QUOTA_1_OF_2).bottleneck == "input"  # no limit: 3.9 GiB of 24 is fine


def test_shuffle_buffers_are_judged_against_the_container_memory_limit():
    from pipediag.analysis.buffers import BufferEstimate

    limit = replace(QUOTA_1_OF_2, memory_limit_bytes=4 * GiB, memory_reason=None)
    buffers = [BufferEstimate(stage="shuffle(50000)", index=1, elements=50000, bytes_per_element=150 * 2**10)]  # 7.2 GiB
    v = decide(input_bound(), container=limit, buffers=buffers)
    assert v.bottleneck == "memory" and v.facts["ram_budget_source"] == "container_limit"
    assert any("the container's memory limit of 4.00 GiB" in e for e in v.evidence)
    assert decide(input_bound(), container=QUOTA_1_OF_2, buffers=buffers).bottleneck != "memory"  # 24 GiB host


def test_a_modes_throttling_comes_from_its_samples():
    cpu = CpuReading(50.0, (60.0, 40.0), 100.0, 0.0, 2**30, 12 * GiB, 24 * GiB)
    samples = tuple(Sample(t * 10**8, cpu, throttle=ThrottleCounters(100 + 10 * t, 5 + 7 * t, t * 5 * 10**7))
                    for t in range(11))
    log = SampleLog(interval_s=0.1, samples=samples, container=QUOTA_1_OF_2)
    run = ModeRun(name="pipeline", start_ns=10**8, end_ns=9 * 10**8, wait_ns=(1,) * 20, compute_ns=(10**7,) * 20,
                  first_step_ns=None, warmup_steps=1, warmup_ns=5, stop_reason="stable")
    m = summarize(run, log)
    assert (m.throttling.periods, m.throttling.throttled_periods) == (80, 56)  # samples 1..9
    assert abs(m.throttling.throttled_frac - 0.7) < 1e-9 and abs(m.throttling.span_s - 0.8) < 1e-9
    assert m.effective_cores == 1.0 and m.cores == 1.0
    from pipediag.analysis.modes import summary_from_dict

    assert summary_from_dict(m.to_dict()).throttling == m.throttling
    assert SampleLog.from_dict(log.to_dict()) == log
    no_quota = summarize(run, replace(log, container=HOST))
    assert no_quota.throttling is None and no_quota.throttling_reason == "no CPU quota: nothing throttles"
    assert within_limit(None, log) is None


def test_a_cpuset_limit_is_named_without_throttling():
    cpuset = replace(HOST, host_cores=64, affinity_cores=4, cpuset_cores=4)
    modes = input_bound(container=cpuset)
    v = decide(modes, container=cpuset)
    assert ("this process may run on 4 cores: the container's cpuset (4 cores), not the host's 64; CPU use is judged "
            "against those") in v.evidence
    assert "throttled_mode" not in v.facts
    assert not any(f.kind == "cpu_quota" for f in recommend(v, modes, [], gpu_present=False, container=cpuset).fixes)
