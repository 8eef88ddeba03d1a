"""Evidence lines of their own for a job on several devices: how many the pipeline can feed, an
idle GPU and a straggler.

Feeding N devices: a step that runs on N devices (steps.placement: where its results live, or its
strategy's replicas) takes, with free input on every device (synthetic mode), N x one device's
appetite; the pipeline alone (input_only) delivers some share of that, which times N is how many
devices it keeps fed (the interval of the two rates' ratio, times N).

The idle and straggler lines compare each GPU's NVML utilization over a mode with the other GPUs' in the same window, and
both need each reading's 95% interval (batch means: analysis.gpu), so that the spread of a short
window cannot make one: a GPU is only called out when its interval and the others' stay apart.

- idle: a GPU the job was given (--gpus, CUDA_VISIBLE_DEVICES) ran no kernel, while others worked.
  The step does not use it: a model outside the strategy's scope, a mesh over fewer devices, a
  PyTorch step that moves every batch to cuda:0. The job pays for a device it does not feed.
- straggler: a GPU busy far less than the others, but not idle. In a synchronous data-parallel
  step every device waits for the slowest at each all-reduce, and NVML counts a collective's
  waiting kernel as busy; so a device busy far *less* than its peers is one that gets less work,
  or gets it late (an uneven shard, its batch copied last by a per-device loop). When it is so in
  pipeline mode but not with free input (synthetic), the input side feeds it late.

The lines add to any verdict; they never change the bottleneck (the modes' rates do that).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from pipediag.analysis.gpu import GpuWindow
from pipediag.analysis.modes import ModeSummary, rate_ratio

IDLE_BUSY_PCT = 5.0  # a GPU whose busy interval stays under this ran (almost) no kernel
PEER_BUSY_PCT = 20.0  # ... while another GPU's interval stayed above this: the job was working
STRAGGLER_GAP_PCT = 25.0  # a straggler is busy this many points below the median of the others

MODES = ("synthetic", "pipeline")  # the modes with a step: a device can only be idle beside one


@dataclass(frozen=True)
class DeviceFinding:
    kind: str  # idle | straggler
    mode: str
    index: int | None
    uuid: str | None
    util_pct: float
    util_pct_ci: tuple[float, float]
    peers_util_pct: tuple[float, ...]  # the other GPUs' means in the same window

    def name(self) -> str:
        return f"GPU {self.index if self.index is not None else '?'}" + (f" ({self.uuid})" if self.uuid else "")


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def idle_devices(m: ModeSummary) -> list[DeviceFinding]:
    """GPUs of the mode whose busy interval stays under IDLE_BUSY_PCT while another GPU's stays
    above PEER_BUSY_PCT. Needs every such GPU's interval (enough readings)."""
    measured = [g for g in m.gpus if g.util_pct is not None and g.util_pct_ci is not None]
    busy = [g for g in measured if g.util_pct_ci[0] >= PEER_BUSY_PCT]
    if not busy:
        return []
    return [_finding("idle", m.name, g, [p for p in measured if p is not g])
            for g in measured if g.util_pct_ci[1] < IDLE_BUSY_PCT]


def stragglers(m: ModeSummary) -> list[DeviceFinding]:
    """GPUs busy at least STRAGGLER_GAP_PCT points below the median of the others, with their
    interval's top under every other working GPU's interval bottom; idle GPUs are not stragglers."""
    measured = [g for g in m.gpus if g.util_pct is not None and g.util_pct_ci is not None]
    if len(measured) < 2:
        return []
    found = []
    for g in measured:
        if g.util_pct_ci[1] < IDLE_BUSY_PCT:
            continue
        peers = [p for p in measured if p is not g and p.util_pct_ci[1] >= IDLE_BUSY_PCT]
        if not peers:
            continue
        gap = _median([p.util_pct for p in peers]) - g.util_pct
        if gap >= STRAGGLER_GAP_PCT and g.util_pct_ci[1] < min(p.util_pct_ci[0] for p in peers):
            found.append(_finding("straggler", m.name, g, peers))
    return found


def _finding(kind: str, mode: str, g: GpuWindow, peers: list[GpuWindow]) -> DeviceFinding:
    return DeviceFinding(kind, mode, g.index, g.uuid, g.util_pct, g.util_pct_ci,
                         tuple(p.util_pct for p in peers))


def _range(values: tuple[float, ...]) -> str:
    low, high = min(values), max(values)
    return f"{low:.0f}%" if round(low) == round(high) else f"{low:.0f}–{high:.0f}%"


def finding_text(f: DeviceFinding, synthetic_found: bool | None) -> str:
    busy = (f"busy {f.util_pct:.0f}% (95% {max(0.0, f.util_pct_ci[0]):.0f}–{f.util_pct_ci[1]:.0f}%) in {f.mode} "
            f"mode, against {_range(f.peers_util_pct)} on the other GPUs (NVML utilization)")
    if f.kind == "idle":
        return (f"{f.name()} idle: {busy}: the step does not use it (a model built outside the strategy's "
                "scope, a mesh over fewer devices, every batch moved to one device); the job holds a GPU it "
                "does not feed")
    text = (f"{f.name()} straggles: {busy}: it gets less work or gets it late (an uneven shard, its batch "
            "copied last), and a synchronous step waits for the slowest device")
    if synthetic_found is False:
        text += "; with free input (synthetic mode) it kept up: the input side feeds it late"
    elif synthetic_found:
        text += "; so it did with free input (synthetic mode): the step's own split, not the input"
    return text


def device_lines(modes: Mapping[str, ModeSummary | None]) -> tuple[tuple[str, ...], dict[str, list[int | None]]]:
    """The evidence lines and facts (idle_gpus, straggler_gpus: NVML indices) for every mode with
    a step that measured several GPUs. A GPU idle or straggling in both modes is told once, in
    pipeline mode (what training gets), with whether it was so with free input."""
    found: dict[str, list[DeviceFinding]] = {}
    for name in MODES:
        m = modes.get(name)
        if m is not None and m.gpus:
            found[name] = idle_devices(m) + stragglers(m)
    lines, facts = [], {"idle_gpus": [], "straggler_gpus": []}
    in_synthetic = {(f.kind, f.index) for f in found.get("synthetic", [])}
    in_pipeline = {(f.kind, f.index) for f in found.get("pipeline", [])}
    for f in found.get("pipeline", []):
        measured = "synthetic" in found
        lines.append(finding_text(f, ((f.kind, f.index) in in_synthetic) if measured else None))
        facts[f"{f.kind}_gpus"].append(f.index)
    for f in found.get("synthetic", []):
        if (f.kind, f.index) not in in_pipeline:
            lines.append(finding_text(f, None))
            if f.index not in facts[f"{f.kind}_gpus"]:
                facts[f"{f.kind}_gpus"].append(f.index)
    return tuple(lines), {k: v for k, v in facts.items() if v}


def feeding_line(modes: Mapping[str, ModeSummary | None], devices: tuple[str, ...]) -> tuple[str | None, dict]:
    """For a step on N devices: what they take together with free input (synthetic mode: every
    device fed at once, so its rate is N x one device's appetite), and how many of them the pipeline
    alone (input_only) could keep fed, with the interval of that ratio. (None, {}) for one device,
    or without the two rates."""
    n = len(devices)
    synthetic, input_only = modes.get("synthetic"), modes.get("input_only")
    if n < 2 or synthetic is None or not synthetic.batches_per_sec:
        return None, {}
    take = synthetic.batches_per_sec
    names = devices[0] + "–" + devices[-1] if n > 2 else " and ".join(devices)
    text = (f"the step ran on {n} devices ({names}): with free input they take {take:.1f} global batches/s "
            f"together, {take / n:.1f}/s per device's share (1/{n} of each batch)")
    share = rate_ratio(input_only, synthetic)
    if share is None:
        return text, {"devices": n}
    fed = share.value * n
    interval = f"95% {share.low * n:.1f}–{share.high * n:.1f}" if share.low is not None else None
    spread = f" ({interval})" if interval else ""
    delivers = f"; the pipeline alone delivers {input_only.batches_per_sec:.1f}/s, {share.value:.2f}x that"
    if share.clearly_above_one or (share.low is None and share.value >= 1.0):
        text += f"{delivers}: enough for all {n}; it would keep {fed:.1f} such devices fed{spread}"
    elif share.clearly_below_one or share.low is None:
        text += f"{delivers}: enough for {fed:.1f} of the {n} devices{spread}"
    else:
        text += f"{delivers}: about what the {n} devices take ({fed:.1f} of them, {interval})"
    return text, {"devices": n, "devices_fed": fed}


def with_device_lines(verdict, modes: Mapping[str, ModeSummary | None], devices: tuple[str, ...] = ()):
    """The verdict with the device lines (feeding N devices, an idle GPU, a straggler) appended to
    its evidence and their facts added. `devices`: where the step ran (steps.placement)."""
    feeding, feeding_facts = feeding_line(modes, devices)
    lines, facts = device_lines(modes)
    lines = ((feeding,) if feeding else ()) + lines
    if not lines:
        return verdict
    return replace(verdict, evidence=verdict.evidence + lines, facts={**verdict.facts, **feeding_facts, **facts})
