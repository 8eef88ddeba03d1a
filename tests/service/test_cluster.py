"""Real dispatcher and worker processes on loopback, and that nothing is left behind."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest

from pipediag.errors import UsageError
from pipediag.service.cluster import LocalCluster, ServiceError, alive, host_cores, listening, parse_address, probe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def gone(pids, ports, within_s=20.0):
    """Wait until none of pids is alive and none of ports listens; return what is left."""
    deadline = time.monotonic() + within_s
    while True:
        left_pids = [p for p in pids if alive(p)]
        left_ports = list(listening(set(ports))[0] or ())
        if (not left_pids and not left_ports) or time.monotonic() > deadline:
            return left_pids, left_ports
        time.sleep(0.2)


@pytest.mark.slow
def test_dispatcher_and_workers_start_on_os_chosen_ports_and_stop_without_a_trace():
    with LocalCluster(worker_cores=1) as cluster:
        workers = cluster.add_workers(2)
        servers = cluster.servers
        ports = {s.port for s in servers}
        assert len(ports) == 3 and all(p > 0 for p in ports)
        assert cluster.target == f"grpc://127.0.0.1:{cluster.dispatcher.port}"
        assert set(listening(ports)[0]) == ports
        assert all(alive(s.pid) for s in servers)
        assert {s.pid for s in servers} == {c.pid for c in psutil.Process().children()}
        if hasattr(os, "sched_setaffinity"):
            cores = host_cores()
            assert [w.cores for w in workers] == [(cores[0],), (cores[1 % len(cores)],)]
            assert all(w.pinned for w in workers)
    shutdown = cluster.stop()  # already stopped by the context manager: the same record
    assert shutdown.clean, shutdown
    assert set(shutdown.ended.values()) == {"clean"} and len(shutdown.ended) == 3
    assert shutdown.leftover_pids == () and shutdown.leftover_ports == ()
    assert gone([s.pid for s in servers], ports, within_s=0) == ([], [])


@pytest.mark.slow
def test_servers_exit_by_themselves_when_pipediag_is_killed():
    """SIGKILL leaves no chance to clean up: the servers see their stdin close and exit."""
    script = (
        "import json, sys, time\n"
        "from pipediag.service.cluster import LocalCluster\n"
        "c = LocalCluster().start(); c.add_workers(1)\n"
        "print(json.dumps([[s.pid, s.port] for s in c.servers]), flush=True)\n"
        "time.sleep(600)\n"
    )
    env = dict(os.environ, PYTHONPATH=ROOT)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, env=env)
    try:
        servers = json.loads(parent.stdout.readline())
        assert len(servers) == 2 and all(alive(pid) for pid, _ in servers)
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    assert gone([pid for pid, _ in servers], [port for _, port in servers]) == ([], [])


def test_a_server_that_cannot_start_is_an_error_and_leaves_nothing():
    cluster = LocalCluster(python="/bin/false")
    with pytest.raises(ServiceError, match="exited while starting"):
        with cluster:
            pass
    shutdown = cluster.stop()
    assert shutdown.leftover_pids == () and shutdown.ended == {f"dispatcher {cluster.pids[0]}": "exited 1"}
    assert psutil.Process().children() == []
    shutil.rmtree(shutdown.log_dir)  # kept for a user to read, since it did not end cleanly


@pytest.mark.slow
def test_a_dead_worker_is_reported():
    with LocalCluster() as cluster:
        (worker,) = cluster.add_workers(1)
        os.kill(worker.pid, signal.SIGKILL)
        with pytest.raises(ServiceError, match="died"):
            for _ in range(50):
                cluster.check()
                time.sleep(0.1)
    shutdown = cluster.stop()
    assert shutdown.ended[f"worker {worker.pid}"] == "died earlier"
    assert not shutdown.clean and shutdown.leftover_pids == () and shutdown.leftover_ports == ()
    shutil.rmtree(shutdown.log_dir)


@pytest.mark.parametrize("text,expected", [
    ("grpc://dispatcher:5000", ("grpc://dispatcher:5000", "dispatcher", 5000)),
    ("10.0.0.7:31000", ("grpc://10.0.0.7:31000", "10.0.0.7", 31000)),
    ("grpc://[::1]:5000", ("grpc://::1:5000", "::1", 5000)),
])
def test_parse_address(text, expected):
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["dispatcher", "http://d:5000", "d:port", "d:70000", ":5000"])
def test_bad_addresses_are_usage_errors(text):
    with pytest.raises(UsageError):
        parse_address(text)


def test_probe_of_a_closed_port_fails_at_once():
    import socket

    with socket.socket() as s:  # bind, learn the port, close: nothing listens there now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServiceError, match="cannot reach"):
        probe("127.0.0.1", port, timeout_s=2)
