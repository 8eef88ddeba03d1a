"""`pipediag diagnose` inside a real cgroup with a CPU quota of one core (cgroup v1 `cpu`
controller): the report must count one effective core, name the quota in its evidence, and give
no thread advice above it. Needs root and a writable v1 cpu hierarchy; skipped elsewhere."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU_V1 = Path("/sys/fs/cgroup/cpu")


def _child_cgroup() -> Path:
    """A fresh child of the v1 cpu hierarchy with a quota of one core, or a skip with the reason."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("a one-core quota is no limit on a one-core host")
    if not (CPU_V1 / "cpu.cfs_quota_us").exists():
        pytest.skip(f"no cgroup v1 cpu controller mounted at {CPU_V1}")
    child = CPU_V1 / f"pipediag-test-{os.getpid()}"
    try:
        child.mkdir()
    except OSError as error:
        pytest.skip(f"cannot create a cgroup under {CPU_V1}: {error}")
    try:
        period = int((child / "cpu.cfs_period_us").read_text())
        (child / "cpu.cfs_quota_us").write_text(f"{period}\n")  # quota = period: one core
    except OSError as error:
        _remove(child)
        pytest.skip(f"cannot set a CPU quota in {child}: {error}")
    return child


def _remove(child: Path) -> None:
    """Kill what is left in the cgroup (only processes this test started are in it), then remove it."""
    for _ in range(50):
        try:
            pids = [int(p) for p in (child / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            child.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)  # the killed processes leave the cgroup a moment later
    child.rmdir()  # raise: a cgroup left behind must not pass unseen


@pytest.mark.slow
def test_diagnose_in_a_one_core_cgroup_counts_one_core_and_names_the_quota(tmp_path):
    child = _child_cgroup()
    out = tmp_path / "run.json"
    command = [sys.executable, "-m", "pipediag", "diagnose", "--demo", "--quiet", "--max-seconds", "1",
               "--json", str(out)]
    shell = f'echo $$ > {child / "cgroup.procs"} && exec "$@"'
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    try:
        result = subprocess.run(["sh", "-c", shell, "sh", *command], capture_output=True, text=True, env=env,
                                cwd=ROOT, timeout=540)
        stat = (child / "cpu.stat").read_text()
    finally:
        _remove(child)
    assert not child.exists()
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(re.search(r"nr_periods (\d+)", stat).group(1)) > 0  # the run was inside the quota

    data = json.loads(out.read_text())
    container = data["environment"]["container"]
    assert container["effective_cores"] == 1.0 and container["cpu_source"] == "quota"
    assert container["quota_cores"] == 1.0 and container["cpu_stat_path"] == str(child / "cpu.stat")
    quota = f"the container's CPU quota (1.0 cores), not the host's {container['host_cores']}"
    assert any(quota in line for line in data["verdict"]["evidence"]), data["verdict"]["evidence"]
    assert data["verdict"]["facts"]["effective_cores"] == 1.0
    pipeline = data["modes"]["pipeline"]
    assert pipeline["effective_cores"] == 1.0
    assert pipeline["throttling"] is not None and pipeline["throttling"]["periods"] > 0, pipeline["throttling_reason"]
    # No thread advice above the one core: no threading change applied, none recommended, and
    # no thread count above 1 in any fix's code.
    assert not [c for c in data["tuning"]["changes"] if c["kind"] == "threading" and c["applied"]]
    assert not [f for f in data["fixes"] if f["kind"] == "threading"]
    for fix in data["fixes"]:
        for n in re.findall(r"(?:private_threadpool_size|cpu_budget) = (\d+)", fix["code"]):
            assert int(n) <= 1, fix
    assert "CPU limit: 1 core: CPU quota" in " ".join(result.stdout.split())
