"""Container limits from cgroup v1, v2 and hybrid file trees laid out as fixtures in a temp dir."""

from pathlib import Path

import pytest

from pipediag.records.container import ContainerLimits, ThrottleCounters, throttling
from pipediag.samples.container import parse_cpu_list, read_limits, read_throttle

GIB = 2**30
V1_UNLIMITED = "9223372036854771712\n"  # what a v1 memory cgroup without a limit reads


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def limits(root: Path, affinity: int | None = 64) -> ContainerLimits:
    return read_limits(root, host_cores=64, host_memory_bytes=256 * GIB, affinity=lambda: affinity)


V2_MOUNTINFO = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def v2_pod(tmp_path: Path, **extra: str) -> Path:
    """A Kubernetes-style v2 pod: the quota on the container's cgroup, the pod's parent unlimited."""
    files = {
        "proc/self/mountinfo": V2_MOUNTINFO,
        "proc/self/cgroup": "0::/kubepods/pod1/c1\n",
        "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n",
        "sys/fs/cgroup/kubepods/cpu.max": "max 100000\n",
        "sys/fs/cgroup/kubepods/pod1/cpu.max": "max 100000\n",
        "sys/fs/cgroup/kubepods/pod1/c1/cpu.max": "200000 100000\n",
        "sys/fs/cgroup/kubepods/pod1/c1/cpu.stat": "usage_usec 9000\nnr_periods 50\nnr_throttled 20\nthrottled_usec 1500000\n",
        "sys/fs/cgroup/kubepods/pod1/c1/memory.max": f"{4 * GIB}\n",
        "sys/fs/cgroup/kubepods/pod1/memory.max": "max\n",
        "sys/fs/cgroup/kubepods/pod1/c1/cpuset.cpus.effective": "0-3,8\n",
        "sys/fs/cgroup/kubepods/pod1/c1/cpuset.cpus": "\n",
    }
    files.update(extra)
    return tree(tmp_path, files)


def test_cgroup_v2_quota_cpuset_memory_and_throttling(tmp_path):
    got = limits(v2_pod(tmp_path))
    assert (got.cgroup, got.quota_cores, got.quota_us, got.period_us) == ("v2", 2.0, 200000, 100000)
    assert got.cpuset_cores == 5  # "0-3,8"
    assert got.effective_cores == 2.0 and got.cpu_source == "quota" and got.cpu_limited
    assert got.cpu_text() == "the container's CPU quota (2.0 cores), not the host's 64"
    assert got.memory_limit_bytes == 4 * GIB and got.effective_memory_bytes == 4 * GIB
    assert read_throttle(got.cpu_stat_path) == ThrottleCounters(50, 20, 1_500_000_000)
    assert ContainerLimits.from_dict(got.to_dict()) == got


def test_cgroup_v2_unlimited_reads_as_no_limit_with_a_reason(tmp_path):
    root = v2_pod(tmp_path, **{"sys/fs/cgroup/kubepods/pod1/c1/cpu.max": "max 100000\n",
                               "sys/fs/cgroup/kubepods/pod1/c1/memory.max": "max\n",
                               "sys/fs/cgroup/kubepods/pod1/c1/cpuset.cpus.effective": "0-63\n"})
    got = limits(root)
    assert got.quota_cores is None and "no CPU quota" in got.quota_reason
    assert got.memory_limit_bytes is None and "no memory limit" in got.memory_reason
    assert got.effective_memory_bytes == 256 * GIB
    assert got.effective_cores == 64 and got.cpu_source == "host" and not got.cpu_limited
    assert got.cpu_stat_path is None and got.throttle_reason == "no CPU quota: nothing throttles"


def test_a_parents_smaller_quota_binds_and_its_counters_are_read(tmp_path):
    root = v2_pod(tmp_path, **{"sys/fs/cgroup/kubepods/pod1/cpu.max": "50000 100000\n",
                               "sys/fs/cgroup/kubepods/pod1/cpu.stat": "nr_periods 7\nnr_throttled 7\nthrottled_usec 10\n"})
    got = limits(root)
    assert got.quota_cores == 0.5 and got.whole_cores == 1
    assert got.cpu_stat_path.endswith("kubepods/pod1/cpu.stat")


def test_v2_without_the_cpu_controller_has_no_quota(tmp_path):
    root = tree(tmp_path, {"proc/self/mountinfo": V2_MOUNTINFO, "proc/self/cgroup": "0::/user.slice\n",
                           "sys/fs/cgroup/cgroup.controllers": "memory pids\n",
                           "sys/fs/cgroup/user.slice/cgroup.controllers": "memory pids\n"})
    got = limits(root)
    assert got.quota_cores is None and "no cgroup cpu controller" in got.quota_reason
    assert got.cpuset_cores is None and got.effective_cores == 64
    assert "missing or unreadable" in got.memory_reason  # the memory controller, but no memory.max


V1_MOUNTINFO = (
    "31 23 0:28 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
    "32 31 0:29 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "33 31 0:30 /docker/abc /sys/fs/cgroup/cpuset ro,relatime - cgroup cgroup rw,cpuset\n"
    "34 31 0:31 /docker/abc /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory\n"
)


def v1_docker(tmp_path: Path, **extra: str) -> Path:
    """Docker on cgroup v1 without a cgroup namespace: /proc/self/cgroup names /docker/abc, and
    the mounts show that same cgroup at their mount points."""
    files = {
        "proc/self/mountinfo": V1_MOUNTINFO,
        "proc/self/cgroup": "4:memory:/docker/abc\n3:cpuset:/docker/abc\n2:cpu,cpuacct:/docker/abc\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "150000\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.stat": "nr_periods 10\nnr_throttled 4\nthrottled_time 123456789\n",
        "sys/fs/cgroup/cpuset/cpuset.cpus": "0-3,8\n",
        "sys/fs/cgroup/memory/memory.limit_in_bytes": V1_UNLIMITED,
    }
    files.update(extra)
    return tree(tmp_path, files)


def test_cgroup_v1_quota_in_docker(tmp_path):
    got = limits(v1_docker(tmp_path))
    assert (got.cgroup, got.quota_cores, got.whole_cores) == ("v1", 1.5, 2)
    assert got.cpuset_cores == 5
    assert got.memory_limit_bytes is None and "unlimited" in got.memory_reason  # the huge v1 value
    assert read_throttle(got.cpu_stat_path) == ThrottleCounters(10, 4, 123456789)


def test_cgroup_v1_memory_limit_and_no_quota(tmp_path):
    got = limits(v1_docker(tmp_path, **{"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
                                         "sys/fs/cgroup/memory/memory.limit_in_bytes": f"{8 * GIB}\n"}))
    assert got.quota_cores is None and "unlimited" in got.quota_reason
    assert got.effective_cores == 5 and got.cpu_source == "cpuset"
    assert got.cpu_text() == "the container's cpuset (5 cores), not the host's 64"
    assert got.memory_limit_bytes == 8 * GIB


def test_cgroup_v1_missing_files_are_unknown_with_a_reason(tmp_path):
    root = tree(tmp_path, {"proc/self/mountinfo": V1_MOUNTINFO,
                           "proc/self/cgroup": "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n"})
    got = limits(root)
    assert got.quota_cores is None and "missing or unreadable" in got.quota_reason
    assert got.memory_limit_bytes is None and "missing or unreadable" in got.memory_reason
    assert got.cpuset_cores is None  # this process is in no cpuset hierarchy


def test_hybrid_host_reads_the_v1_cpu_controller_and_walks_up_to_the_mount(tmp_path):
    # This development machine's layout: v1 controllers, and a v2 hierarchy with none of them.
    mountinfo = ("32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
                 "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
                 "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n")
    root = tree(tmp_path, {
        "proc/self/mountinfo": mountinfo,
        "proc/self/cgroup": "4:memory:/process_api/x\n1:cpu:/job/step\n0::/\n",
        "sys/fs/cgroup/unified/cgroup.controllers": "\n",
        "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/cpu/job/cpu.cfs_quota_us": "100000\n", "sys/fs/cgroup/cpu/job/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/cpu/job/cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
        "sys/fs/cgroup/cpu/job/step/cpu.cfs_quota_us": "-1\n",
        "sys/fs/cgroup/cpu/job/step/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": f"{2 * GIB}\n",
        "sys/fs/cgroup/memory/memory.limit_in_bytes": V1_UNLIMITED,
    })
    got = limits(root, affinity=2)
    assert got.cgroup == "hybrid"
    assert got.quota_cores == 1.0 and got.cpu_stat_path.endswith("cpu/job/cpu.stat")
    assert got.memory_limit_bytes == 2 * GIB


def test_mount_points_with_escaped_spaces(tmp_path):
    mountinfo = "30 23 0:26 / /sys/fs/my\\040cgroup rw - cgroup2 cgroup2 rw\n"
    root = tree(tmp_path, {"proc/self/mountinfo": mountinfo, "proc/self/cgroup": "0::/a\n",
                           "sys/fs/my cgroup/cgroup.controllers": "cpu\n",
                           "sys/fs/my cgroup/a/cpu.max": "300000 100000\n"})
    assert limits(root).quota_cores == 3.0


def test_affinity_below_the_quota_sets_the_effective_cores(tmp_path):
    got = limits(v2_pod(tmp_path), affinity=1)
    assert got.effective_cores == 1 and got.cpu_source == "affinity"


def test_no_proc_files_means_no_cgroups(tmp_path):
    got = limits(tmp_path, affinity=None)
    assert got.cgroup is None and "no cgroups" in got.quota_reason
    assert got.effective_cores == 64 and got.affinity_cores is None


@pytest.mark.parametrize("text, count", [("0-3,8", 5), ("0", 1), ("0-63\n", 64), ("1,3,5-6", 4), ("", None),
                                         ("3-1", None), ("x", None)])
def test_cpu_lists(text, count):
    assert parse_cpu_list(text) == count


def test_throttling_between_two_readings():
    delta = throttling(ThrottleCounters(100, 10, 10**9), ThrottleCounters(120, 25, 3 * 10**9), 2.0, 1.0)
    assert (delta.periods, delta.throttled_periods, delta.throttled_s) == (20, 15, 2.0)
    assert delta.throttled_frac == 0.75
    assert throttling(ThrottleCounters(5, 5, 5), ThrottleCounters(5, 5, 5), 1.0, 1.0).throttled_frac is None
    assert throttling(ThrottleCounters(100, 10, 10), ThrottleCounters(3, 0, 0), 1.0, 1.0) is None  # remade


def test_throttle_counters_missing(tmp_path):
    assert read_throttle(tree(tmp_path, {"cpu.stat": "usage_usec 5\n"}) / "cpu.stat") is None
    assert read_throttle(tmp_path / "absent") is None
    assert read_throttle(None) is None


def test_this_process_reads_without_error():
    got = read_limits()
    assert got.effective_cores >= 0.01 and got.host_cores >= 1
    assert (got.quota_cores is None) == (got.quota_reason is not None)
