"""Which devices a step ran on, read from what it returns: "gpu:0", "cpu:3", ...

A JAX array says where it lives in its sharding (`sharding.device_set`: a loss reduced over a mesh
is replicated on every device of the mesh); a PyTorch tensor in `.device`; a TensorFlow tensor in
`.device`, and a `tf.distribute` per-replica value holds one tensor per replica. Frameworks are
recognised by the value's type and never imported here.

This says where a step's results ended, which is where its work ran for a data-parallel step that
returns per-device values or a JAX array over its mesh, but not for a step that reduces its loss to
one device (`strategy.reduce`, a PyTorch loss moved to cuda:0): then one device is seen, and the
report says "the step's results live on 1 device".
"""

from __future__ import annotations

import re
from typing import Any

from pipediag.steps.sync import leaves

_TF_DEVICE = re.compile(r"device:([A-Za-z_]+):(\d+)", re.IGNORECASE)
_GPU_PLATFORMS = ("gpu", "cuda", "rocm")


def _name(kind: str, index: int | None) -> str:
    kind = kind.lower()
    return f"{'gpu' if kind in _GPU_PLATFORMS else kind}:{index or 0}"


def devices_of(result: Any) -> tuple[str, ...]:
    """The devices the arrays in `result` live on, sorted ("cpu:0" < "gpu:0" < "gpu:1"); () when it
    holds no framework array (plain Python or NumPy values live on the host, not on a device)."""
    found: set[str] = set()
    for leaf in leaves(result):
        module = type(leaf).__module__ or ""
        sharding = getattr(leaf, "sharding", None)
        if module.startswith(("jax", "jaxlib")) and sharding is not None:
            for device in getattr(sharding, "device_set", ()):
                found.add(_name(getattr(device, "platform", "cpu"), getattr(device, "id", 0)))
        elif module.startswith("torch") and hasattr(leaf, "device"):
            found.add(_name(leaf.device.type, leaf.device.index))
        elif module.startswith("tensorflow"):
            match = _TF_DEVICE.search(getattr(leaf, "device", "") or "")
            if match:
                found.add(_name(match.group(1), int(match.group(2))))
    return in_order(found)


def in_order(devices) -> tuple[str, ...]:
    """Device names sorted by kind, then index ("gpu:2" before "gpu:10")."""
    return tuple(sorted(set(devices), key=lambda d: (d.split(":")[0], int(d.split(":")[1]))))


def accelerators(devices: tuple[str, ...]) -> tuple[str, ...]:
    """The devices that did the step's work: its GPUs (or TPUs) when it used any, else its host
    devices (JAX's forced host platform, TensorFlow's logical CPUs)."""
    accel = tuple(d for d in devices if not d.startswith("cpu:"))
    return accel or devices
