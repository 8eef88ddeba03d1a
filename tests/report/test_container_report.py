"""The container's limits and throttling in the environment, the JSON and every report (plain numbers)."""

from dataclasses import replace

from rich.console import Console

from pipediag.analysis.usage import Usage, usage
from pipediag.records.container import ContainerLimits, ThrottleCounters, Throttling
from pipediag.records.environment import Environment
from pipediag.records.readings import CpuReading, Sample, SampleLog
from pipediag.report.html.diagnose import render_html
from pipediag.report.terminal.diagnose import render_diagnosis
from pipediag.report.terminal.env import render_environment
from pipediag.results.diagnose import Diagnosis
from tests.summaries import GiB, diagnosis, environment, summary

QUOTA = ContainerLimits(host_cores=2, affinity_cores=2, cpuset_cores=2, quota_cores=1.0, quota_reason=None,
                        cgroup="v1", memory_limit_bytes=4 * GiB, memory_reason=None, host_memory_bytes=24 * GiB,
                        quota_us=100000, period_us=100000, cpu_stat_path="/sys/fs/cgroup/cpu/x/cpu.stat")


def text(renderable) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def limited_diagnosis() -> Diagnosis:
    d = diagnosis()
    throttled = Throttling(periods=100, throttled_periods=63, throttled_s=4.2, span_s=9.8, quota_cores=1.0)
    modes = {name: replace(m, effective_cores=1.0, throttling=throttled if name == "pipeline" else None,
                           throttling_reason=None if name == "pipeline" else "fewer than two samples")
             for name, m in d.modes.items()}
    return replace(d, environment=environment(container=QUOTA), modes=modes,
                   samples=replace(d.samples, container=QUOTA))


def test_the_limits_and_throttling_round_trip_through_json():
    d = limited_diagnosis()
    again = Diagnosis.from_dict(d.to_dict())
    assert again.environment.container == QUOTA and again.environment.effective_cores == 1.0
    assert again.modes["pipeline"].throttling == d.modes["pipeline"].throttling
    assert again.samples.container == QUOTA
    data = d.to_dict()
    assert data["environment"]["container"]["effective_cores"] == 1.0
    assert data["modes"]["pipeline"]["throttling"]["throttled_frac"] == 0.63


def test_terminal_and_html_show_the_limits_and_each_modes_throttling():
    d = limited_diagnosis()
    out = text(render_diagnosis(d))
    assert "CPU limit: 1 core: CPU quota 100000 µs per 100000 µs (cgroup v1), of the host's 2" in out
    assert "RAM limit: 4.00 GiB (cgroup v1) of the host's 24.0 GiB" in out
    assert "CPU quota throttled (share of periods): pipeline 63%" in out
    page = render_html(d)
    assert "<dt>CPU limit</dt><dd>1 core: CPU quota 100000 µs per 100000 µs (cgroup v1), of the host&#x27;s 2" in page
    assert 'id="throttling">CPU quota throttled (share of periods): pipeline 63%' in page
    # without a limit, nothing is added to the header
    assert "CPU limit" not in text(render_diagnosis(diagnosis()))


def test_pipediag_env_lists_the_limits_and_warns_of_a_single_core():
    from pipediag.samples.environment import _with_warnings

    env = _with_warnings(environment(container=QUOTA))
    out = text(render_environment(env))
    assert "CPU limit  │ 1 core: CPU quota 100000 µs per 100000 µs (cgroup v1), of the host's 2" in out
    assert any(w.startswith("only 1 CPU core(s) for this process (the container's CPU quota (1.0 cores)")
               for w in env.warnings)
    assert Environment.from_dict(env.to_dict()) == env
    host = replace(QUOTA, quota_cores=None, quota_reason="no CPU quota (cpu.cfs_quota_us is unlimited)")
    assert env.differences(replace(env, container=host)) == ["effective cores (container limit): 1 vs 2"]


def test_a_comparisons_usage_sums_the_throttling_of_its_turns():
    cpu = CpuReading(50.0, (60.0, 40.0), 100.0, 0.0, 2**30, 12 * GiB, 24 * GiB)
    # periods +10 and throttled +5 per 100 ms sample
    samples = tuple(Sample(t * 10**8, cpu, throttle=ThrottleCounters(10 * t, 5 * t, 10**7 * t)) for t in range(21))
    log = SampleLog(interval_s=0.1, samples=samples, container=QUOTA)
    u = usage(log, [(0, 5 * 10**8), (10 * 10**8, 15 * 10**8)])  # two turns of 0.5 s, a gap between
    assert (u.throttling.periods, u.throttling.throttled_periods) == (100, 50)
    assert abs(u.throttling.span_s - 1.0) < 1e-9
    assert Usage.from_dict(u.to_dict()) == u
    none = usage(replace(log, container=replace(QUOTA, cpu_stat_path=None, throttle_reason="no CPU quota")),
                 [(0, 5 * 10**8)])
    assert none.throttling is None and none.throttling_reason == "no CPU quota"
    assert summary("pipeline", 10).throttling is None  # older summaries: unknown, not zero
