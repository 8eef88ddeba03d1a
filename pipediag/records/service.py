"""tf.data service servers as recorded: each server's process, port and cores, and how they ended."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pipediag.records.record import DictRecord


@dataclass(frozen=True)
class ServerInfo(DictRecord):
    _tuples = ("cores",)  # from JSON's lists back to a tuple
    role: str  # dispatcher | worker
    pid: int
    port: int
    cores: tuple[int, ...] | None  # the CPU cores it may run on; None where the OS cannot say
    pinned: bool  # pipediag pinned it to those cores
    start_s: float  # from launch to serving (importing TensorFlow is most of it)


@dataclass(frozen=True)
class Shutdown:
    """How the servers ended, and what was checked afterwards."""

    seconds: float
    ended: dict[str, str]  # "worker 1234" -> clean | terminated | killed | exited N | died earlier
    leftover_pids: tuple[int, ...]  # still alive after stopping
    leftover_ports: tuple[int, ...] | None  # still listening; None: could not be checked
    ports_reason: str | None = None  # why leftover_ports is None
    log_dir: str | None = None  # the servers' logs, kept when they did not all end cleanly

    @property
    def clean(self) -> bool:
        return not self.leftover_pids and not self.leftover_ports and all(v == "clean" for v in self.ended.values())

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["clean"] = self.clean
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Shutdown:
        ports = d.get("leftover_ports")
        return cls(
            seconds=d["seconds"], ended=dict(d["ended"]), leftover_pids=tuple(d.get("leftover_pids", ())),
            leftover_ports=None if ports is None else tuple(ports), ports_reason=d.get("ports_reason"),
            log_dir=d.get("log_dir"),
        )
