"""A local tf.data service: one dispatcher and N worker processes on this host, and their end.

Each server is a separate process (`pipediag.service.server`) in a session of its own, so the
terminal's Ctrl-C reaches only pipediag, which then stops the servers in order. A server binds
port 0 and reports the port the operating system gave it. Stopping closes each server's stdin
(it exits at once: a server keeps nothing to save), then, after a timeout, sends SIGTERM and SIGKILL to its process
group. `stop()` runs from the context manager, from `atexit` for an interpreter that exits
without it, and a server whose parent died sees its stdin close and exits by itself.

After stopping, the cluster checks that none of its processes is alive and none of its ports is
still listening, and records what it found.

Clients and workers talk over 127.0.0.1. TensorFlow's servers listen on all interfaces (its
configs have no bind address), without authentication, for as long as the run lasts.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import psutil

from pipediag.errors import PipediagError, UsageError
from pipediag.records.service import ServerInfo, Shutdown

LOOPBACK = "127.0.0.1"
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ServiceError(PipediagError):
    """A tf.data service server could not start, died, or the service did not answer."""

    exit_code = 1


def alive(pid: int) -> bool:
    """The process exists and is not a zombie waiting to be reaped."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def listening(ports: set[int]) -> tuple[tuple[int, ...] | None, str | None]:
    """Which of `ports` some process on this host still listens on (TCP)."""
    if not ports:
        return (), None
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError) as error:
        return None, f"the OS refused to list sockets ({type(error).__name__})"
    return tuple(sorted({c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN and c.laddr
                         and c.laddr.port in ports})), None


def host_cores() -> list[int]:
    """The CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(psutil.cpu_count() or 1))


def parse_address(text: str) -> tuple[str, str, int]:
    """`grpc://host:port` or `host:port` -> (target for TensorFlow, host, port)."""
    rest = text
    protocol = "grpc"
    if "://" in text:
        protocol, rest = text.split("://", 1)
    host, sep, port_text = rest.rpartition(":")
    if protocol != "grpc" or not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UsageError(f"{text!r} is not a tf.data service address",
                         "give the dispatcher as grpc://HOST:PORT, e.g. --service grpc://dispatcher:5000")
    host = host.strip("[]")
    return f"grpc://{host}:{port_text}", host, int(port_text)


def probe(host: str, port: int, timeout_s: float) -> None:
    """Raise a ServiceError unless something accepts TCP connections at host:port. TensorFlow
    itself would wait for an unreachable dispatcher without a timeout."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as error:
        raise ServiceError(
            f"cannot reach the tf.data service dispatcher at {host}:{port}: {error}",
            "check the address and that the dispatcher runs (tf.data.experimental.service.DispatchServer); "
            "without --service, pipediag starts a local one",
        ) from None


@dataclass
class _Proc:
    role: str
    popen: subprocess.Popen
    log_path: str
    launched: float
    pinned: bool
    info: ServerInfo | None = None
    ended: str | None = None

    @property
    def name(self) -> str:
        return f"{self.role} {self.popen.pid}"


class LocalCluster:
    """Dispatcher and workers as processes on this host. Use as a context manager.

    worker_cores: cores pinned to each worker (round robin over the host's cores; workers share
    cores once there are more worker cores than host cores). None: workers are not pinned.
    """

    def __init__(self, worker_cores: int | None = 1, start_timeout_s: float = 120.0, stop_timeout_s: float = 10.0,
                 python: str = sys.executable):
        self.worker_cores = worker_cores
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.python = python
        self._procs: list[_Proc] = []
        self._log_dir: str | None = None
        self._shutdown: Shutdown | None = None

    # -- starting ------------------------------------------------------------------------------
    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> LocalCluster:
        if self._procs:
            return self
        self._log_dir = tempfile.mkdtemp(prefix="pipediag-service-")
        atexit.register(self.stop)
        try:
            self._wait_ready([self._launch("dispatcher", [])])
        except BaseException:
            self.stop()  # a `with` block whose __enter__ raises never reaches __exit__
            raise
        return self

    @property
    def dispatcher(self) -> ServerInfo:
        return self._procs[0].info

    @property
    def target(self) -> str:
        return f"grpc://{LOOPBACK}:{self.dispatcher.port}"

    @property
    def servers(self) -> tuple[ServerInfo, ...]:
        return tuple(p.info for p in self._procs if p.info is not None)

    @property
    def workers(self) -> tuple[ServerInfo, ...]:
        return tuple(s for s in self.servers if s.role == "worker")

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(p.popen.pid for p in self._procs)

    def add_workers(self, count: int) -> tuple[ServerInfo, ...]:
        """Start `count` more workers at once and return when all have registered."""
        if not self._procs or self._shutdown is not None:
            raise RuntimeError("start the cluster before adding workers")
        cores = host_cores()
        first = len(self.workers)
        new = []
        for i in range(first, first + count):
            args = ["--dispatcher", f"{LOOPBACK}:{self.dispatcher.port}"]
            if self.worker_cores and hasattr(os, "sched_setaffinity"):
                mine = sorted({cores[(i * self.worker_cores + j) % len(cores)] for j in range(self.worker_cores)})
                args += ["--cores", ",".join(map(str, mine))]
            new.append(self._launch("worker", args))
        self._wait_ready(new)
        return tuple(p.info for p in new)

    def _launch(self, role: str, args: list[str]) -> _Proc:
        log_path = os.path.join(self._log_dir, f"{role}-{len(self._procs)}.log")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
        with open(log_path, "wb") as log:
            popen = subprocess.Popen(
                [self.python, "-m", "pipediag.service.server", role, *args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                start_new_session=True,  # its own process group: Ctrl-C does not reach it, killpg does
            )
        proc = _Proc(role, popen, log_path, time.monotonic(), pinned="--cores" in args)
        self._procs.append(proc)  # tracked at once, so stop() finds it even if we fail right here
        return proc

    def _wait_ready(self, procs: list[_Proc]) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        waiting = {p.popen.stdout: p for p in procs}
        with selectors.DefaultSelector() as selector:
            for stream in waiting:
                selector.register(stream, selectors.EVENT_READ)
            while waiting:
                left = deadline - time.monotonic()
                if left <= 0:
                    names = ", ".join(p.name for p in waiting.values())
                    raise ServiceError(
                        f"tf.data service server(s) did not start within {self.start_timeout_s:.0f} s: {names}",
                        "importing TensorFlow in each server takes seconds on a busy machine; "
                        "raise --start-timeout or start fewer workers" + self._log_tail(next(iter(waiting.values()))),
                    )
                for key, _ in selector.select(timeout=min(left, 1.0)):
                    proc = waiting.pop(key.fileobj)
                    selector.unregister(key.fileobj)
                    line = key.fileobj.readline()
                    try:
                        report = json.loads(line)
                    except ValueError:
                        try:
                            proc.popen.wait(timeout=self.stop_timeout_s)
                        except subprocess.TimeoutExpired:
                            pass  # it printed something else and lives on: stop() ends it
                        raise ServiceError(
                            f"the tf.data service {proc.role} exited while starting (exit code {proc.popen.returncode})",
                            "see its log below; the servers need the same TensorFlow as pipediag"
                            + self._log_tail(proc),
                        ) from None
                    cores = report.get("cores")
                    proc.info = ServerInfo(
                        role=proc.role, pid=report["pid"], port=report["port"],
                        cores=None if cores is None else tuple(cores), pinned=proc.pinned,
                        start_s=time.monotonic() - proc.launched,
                    )

    def _log_tail(self, proc: _Proc, lines: int = 15) -> str:
        try:
            with open(proc.log_path, errors="replace") as f:
                tail = [line.rstrip() for line in f.readlines()[-lines:]]
        except OSError:
            return ""
        return ("\n--- last lines of its log ---\n" + "\n".join(tail)) if tail else ""

    def check(self) -> None:
        """Raise a ServiceError if a server has died."""
        for proc in self._procs:
            code = proc.popen.poll()
            if code is not None and proc.ended is None:
                proc.ended = "died earlier"
                raise ServiceError(f"the tf.data service {proc.name} died (exit code {code})",
                                   "see its log below" + self._log_tail(proc))

    # -- stopping ------------------------------------------------------------------------------
    def stop(self) -> Shutdown:
        """Stop workers first (their clients are gone), then the dispatcher. Idempotent."""
        if self._shutdown is not None:
            return self._shutdown
        started = time.monotonic()
        try:
            for group in ([p for p in self._procs if p.role == "worker"], [p for p in self._procs if p.role == "dispatcher"]):
                self._stop_group(group)
        except BaseException:
            for proc in self._procs:  # a second Ctrl-C while stopping: no more patience
                if proc.popen.poll() is None:
                    self._signal(proc, signal.SIGKILL)
                    proc.popen.wait()
                    proc.ended = "killed"
            raise
        finally:
            atexit.unregister(self.stop)
        pids = {p.popen.pid for p in self._procs}
        ports = {p.info.port for p in self._procs if p.info is not None}
        leftover_ports, reason = listening(ports)
        shutdown = Shutdown(
            seconds=time.monotonic() - started,
            ended={p.name: p.ended or "clean" for p in self._procs},
            leftover_pids=tuple(sorted(pid for pid in pids if alive(pid))),
            leftover_ports=leftover_ports,
            ports_reason=reason,
        )
        if self._log_dir and shutdown.clean:
            shutil.rmtree(self._log_dir, ignore_errors=True)
        elif self._log_dir:
            shutdown = Shutdown(**{**shutdown.__dict__, "log_dir": self._log_dir})
        self._shutdown = shutdown
        return shutdown

    def _stop_group(self, group: list[_Proc]) -> None:
        for proc in group:
            if proc.popen.stdin and not proc.popen.stdin.closed:
                try:
                    proc.popen.stdin.close()
                except OSError:
                    pass
        deadline = time.monotonic() + self.stop_timeout_s
        for proc in group:
            try:
                code = proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
                if proc.ended is None:
                    proc.ended = "clean" if code == 0 else f"exited {code}"
            except subprocess.TimeoutExpired:
                pass
        for sig, name, wait_s in ((signal.SIGTERM, "terminated", 3.0), (signal.SIGKILL, "killed", None)):
            for proc in group:
                if proc.popen.poll() is None:
                    self._signal(proc, sig)
                    try:
                        proc.popen.wait(timeout=wait_s)
                        proc.ended = name
                    except subprocess.TimeoutExpired:
                        pass
        for proc in group:
            if proc.popen.stdout:
                proc.popen.stdout.close()

    @staticmethod
    def _signal(proc: _Proc, sig: int) -> None:
        try:
            os.killpg(proc.popen.pid, sig)  # the server and anything it started
        except (ProcessLookupError, PermissionError):
            pass
