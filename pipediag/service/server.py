"""The program behind each local tf.data service server.

    python -m pipediag.service.server dispatcher
    python -m pipediag.service.server worker --dispatcher 127.0.0.1:PORT [--cores 0,1]

The server asks for port 0, so the operating system picks a free port at the moment it binds.
(Choosing a free port in the parent and handing its number over would race with every other
program on the host between the check and the bind.) It reports what it bound as one JSON line
on stdout, then serves until its stdin reaches end of file: the parent closes it to stop the
server, and the operating system closes it when the parent dies in any way, SIGKILL included,
so a server never outlives the run that started it.

A worker pinned to cores (`--cores`) is pinned before TensorFlow is imported, so TensorFlow sizes
its thread pools to those cores: a worker then behaves like a machine with that many cores.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

LOOPBACK = "127.0.0.1"
# Released jobs are dropped after a second instead of TensorFlow's five minutes, so the tasks of
# one measurement do not linger on the workers into the next.
JOB_GC_MS = 1000
# Workers learn which of their tasks belong to released jobs only from their heartbeat (every 30 s
# by default); until then those tasks keep their buffers and threads for nobody.
HEARTBEAT_MS = 1000


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m pipediag.service.server")
    p.add_argument("role", choices=["dispatcher", "worker"])
    p.add_argument("--dispatcher", help="host:port of the dispatcher (workers only)")
    p.add_argument("--cores", help="comma-separated CPU cores to pin the process to")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    # Ctrl-C is the parent's to handle: it stops the servers in order (workers, then dispatcher).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cores = None
    if args.cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in args.cores.split(",")})
    if hasattr(os, "sched_getaffinity"):
        cores = sorted(os.sched_getaffinity(0))

    from pipediag.backends.tf import tf

    service = tf.data.experimental.service
    if args.role == "dispatcher":
        server = service.DispatchServer(
            service.DispatcherConfig(port=0, job_gc_check_interval_ms=JOB_GC_MS, job_gc_timeout_ms=JOB_GC_MS)
        )
        port = int(server.target.rsplit(":", 1)[1])
    else:
        if not args.dispatcher:
            print("a worker needs --dispatcher HOST:PORT", file=sys.stderr)
            return 2
        server = service.WorkerServer(
            service.WorkerConfig(dispatcher_address=args.dispatcher, worker_address=f"{LOOPBACK}:%port%", port=0,
                                 heartbeat_interval_ms=HEARTBEAT_MS)
        )
        # The constructor returns once the worker has registered with the dispatcher.
        port = int(server._address.rsplit(":", 1)[1])  # the public API has no getter for a worker's port
    print(json.dumps({"role": args.role, "pid": os.getpid(), "port": port, "cores": cores}), flush=True)
    sys.stdin.read()  # until the parent closes our stdin, or dies
    print(f"{args.role}: stdin closed, exiting", file=sys.stderr, flush=True)
    sys.stdout.flush()
    # Exit without server.stop(): the server keeps nothing to save (no work_dir, no snapshots),
    # and TensorFlow's stop() waits for the requests in flight while holding Python's lock, which
    # took 10 s at times (four workers on two cores). The operating system closes the sockets.
    os._exit(0)

if __name__ == "__main__":
    sys.exit(main())
