"""Peak device memory per mode, from the framework itself when it can tell.

- JAX: `Device.memory_stats()` (`peak_bytes_in_use`, `bytes_in_use`, `bytes_limit`). The peak
  cannot be reset, so a mode's reading is its own only when the peak rose during the mode;
  otherwise it is the process's peak so far (an upper bound), and `scope` says which.
- PyTorch: `torch.cuda.reset_peak_memory_stats()` before the mode, `max_memory_allocated()`
  after: the mode's own peak of memory held by tensors.
- TensorFlow: `tf.config.experimental.reset_memory_stats` and `get_memory_info` on GPU:0.

Frameworks are reached through `sys.modules` only: a framework the user's code did not import is
not asked. Frameworks on the CPU are not asked either (JAX's CPU device reports no stats; the
host's memory is sampled by psutil). Without any, the analysis falls back to NVML's reading of
this process's GPU memory.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from pipediag.records.memory import FrameworkMemory

SCOPE_MODE = "mode"  # the peak was reached during this mode
SCOPE_PROCESS = "process"  # the process's peak so far: an upper bound on this mode's


class _Probe:
    framework = ""

    def reset(self) -> None:
        raise NotImplementedError

    def read(self) -> FrameworkMemory | None:
        raise NotImplementedError


class JaxProbe(_Probe):
    framework = "jax"

    def __init__(self, device: Any):
        self.device = device
        self._peak_before: int | None = None

    def reset(self) -> None:
        stats = self.device.memory_stats() or {}
        self._peak_before = stats.get("peak_bytes_in_use")

    def read(self) -> FrameworkMemory | None:
        stats = self.device.memory_stats()
        if not stats:
            return None
        peak = stats.get("peak_bytes_in_use")
        rose = peak is not None and (self._peak_before is None or peak > self._peak_before)
        return FrameworkMemory(
            framework="jax", api="Device.memory_stats()", device=str(self.device),
            peak_bytes=peak, in_use_bytes=stats.get("bytes_in_use"), limit_bytes=stats.get("bytes_limit"),
            scope=SCOPE_MODE if rose else SCOPE_PROCESS,
        )


class TorchProbe(_Probe):
    framework = "torch"

    def __init__(self, torch: Any):
        self.torch = torch

    def reset(self) -> None:
        self.torch.cuda.reset_peak_memory_stats()

    def read(self) -> FrameworkMemory | None:
        cuda = self.torch.cuda
        index = cuda.current_device()
        return FrameworkMemory(
            framework="torch", api="torch.cuda.max_memory_allocated()", device=f"cuda:{index}",
            peak_bytes=int(cuda.max_memory_allocated()), in_use_bytes=int(cuda.memory_allocated()),
            limit_bytes=int(cuda.get_device_properties(index).total_memory), scope=SCOPE_MODE,
        )


class TensorflowProbe(_Probe):
    framework = "tensorflow"
    device = "GPU:0"

    def reset(self) -> None:
        from pipediag.backends.tf import tf

        tf.config.experimental.reset_memory_stats(self.device)

    def read(self) -> FrameworkMemory | None:
        from pipediag.backends.tf import tf

        info = tf.config.experimental.get_memory_info(self.device)
        return FrameworkMemory(
            framework="tensorflow", api="tf.config.experimental.get_memory_info()", device=self.device,
            peak_bytes=int(info["peak"]), in_use_bytes=int(info["current"]), limit_bytes=None, scope=SCOPE_MODE,
        )


def available_probes() -> list[_Probe]:
    """A probe for each already-imported framework that has a GPU (or other accelerator)."""
    probes: list[_Probe] = []
    jax = sys.modules.get("jax")
    if jax is not None and hasattr(jax, "local_devices"):
        try:
            devices = [d for d in jax.local_devices() if d.platform != "cpu"]
        except RuntimeError:
            devices = []
        if devices and devices[0].memory_stats() is not None:
            probes.append(JaxProbe(devices[0]))
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available() and cuda.is_initialized():
        probes.append(TorchProbe(torch))
    if "tensorflow" in sys.modules:
        from pipediag.backends.tf import tf

        if tf.config.list_logical_devices("GPU"):
            probes.append(TensorflowProbe())
    return probes


class DeviceMemory:
    """Brackets one mode: `start()` before it, `stop()` after. `framework()` names the step's
    framework once it is known, so that of several imported frameworks the step's own is read."""

    def __init__(self, framework: Callable[[], str | None] = lambda: None,
                 probes: Callable[[], list[_Probe]] = available_probes):
        self._framework = framework
        self._find = probes
        self._probes: list[_Probe] = []

    def start(self) -> None:
        self._probes = self._find()
        for probe in self._probes:
            probe.reset()

    def stop(self) -> FrameworkMemory | None:
        # A framework that first touched its GPU during the mode (PyTorch initialises CUDA
        # lazily) has no reset before it: its peak is the process's.
        late = [p for p in self._find() if p.framework not in {q.framework for q in self._probes}]
        wanted = self._framework()
        ordered = sorted(self._probes + late, key=lambda p: p.framework != wanted)
        for probe in ordered:
            reading = probe.read()
            if reading is not None and reading.peak_bytes is not None:
                if probe in late:
                    reading = FrameworkMemory(**{**reading.to_dict(), "scope": SCOPE_PROCESS})
                return reading
        return None
