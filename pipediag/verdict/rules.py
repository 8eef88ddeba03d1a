"""The verdict: from per-mode numbers to one bottleneck, a confidence, and evidence lines.

Order of the rules (first match wins), each explained in docs/verdict.md:
1. memory  — a mode ran out of memory; host memory nearly exhausted; this process's RSS within
             5% of the container's memory limit; the pipeline's shuffle buffers alone hold more
             than the RAM budget (or the container's memory limit, or the host's memory).
2. inconclusive — the modes that decide did not measure enough steps.
3. input   — the pipeline alone is clearly slower than the free step and the fed step is slowed
             accordingly; or the fed step waited for input >= 20% of the time (high), or >= 5%
             (moderate), unless that wait cost no throughput (fed at the free rate, input alone
             clearly faster); or it did not wait but ran clearly slower beside the pipeline
             (contention), both readings clear of their line (within its spread: measured longer,
             then not called, confidence lowered; verdict.edges), and the pipeline's CPU at the fed
             rate enough to cause that slowdown.
4. memory  — GPU memory >= 95% full with nothing else limiting: the step's peak against what its
             framework may use (medium), else NVML's device reading (low: preallocation).
5. host    — with free input the GPU was busy < 50% of the time: per-step overhead; or (GPM) it
             was busy, but while it was, fewer than 25% of its SMs had work: small kernels.
6. compute — the step itself is the limit; with GPM, memory-bandwidth-bound when DRAM bandwidth
             is >= 50% of peak while no arithmetic pipe is busy 30% of the time.
Before 4-6: a free step timed slower than the step can run (two speeds, mostly the slow one:
analysis.regimes; or its own time clearly over the fed step's) lowers confidence when at the faster
speed the input side could be the limit (diagnose measures the two modes again first).
CPU use is judged against the cores this process may use (a container's quota, cpuset or
affinity), and every verdict gets the container's CPU limit as evidence: a mode throttled in
>= 25% of its CFS periods ran at its quota (verdict.container).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from pipediag.analysis.buffers import BufferEstimate
from pipediag.analysis.handover import Handover
from pipediag.analysis.modes import InputSideCpu, ModeSummary, Ratio, input_side_cpu, rate_ratio
from pipediag.records.container import ContainerLimits, cores_text
from pipediag.records.verdict import CpuPattern, Verdict, lower
from pipediag.verdict import thresholds as T
from pipediag.verdict.busy_gpu import busy_gpu_verdict
from pipediag.verdict.container import with_container
from pipediag.verdict.contention import (
    CALLED_WHEN,
    contended_by_others,
    host_idle_cores,
    idle_cores,
    other_load_cores,
    pipeline_cpu_at_fed_rate,
    read_contention,
)
from pipediag.verdict.edges import ratio_interval
from pipediag.verdict.gpu import gpm_facts, gpm_text, gpu_edges, memory_full
from pipediag.verdict.handover_edge import handover_edge, handover_facts, host_edge_verdict, without_handover
from pipediag.verdict.memory import memory_verdict
from pipediag.verdict.text import pct


def _cores(values: tuple[float, ...]) -> str:
    return " ".join(f"{v:.0f}%" for v in values)


def classify_cpu(side: InputSideCpu) -> CpuPattern:
    """Classify by this process's own CPU time (tf.data runs in-process), so that other programs on
    a shared machine do not pass for a saturated pipeline; the per-core numbers are shown as seen."""
    w, where = side.cpu, side.where
    own = w.process_pct / 100.0
    per_core = f"per core {_cores(w.per_core_pct)}"
    cores = w.usable_cores
    if cores < w.cores:  # a container's quota, cpuset or affinity: judged against what it may use
        busy = f"this process {own:.1f} of the {cores_text(cores)} it may use (the host has {w.cores})"
        what = "all the cores it may use saturated"
    else:
        busy = f"this process {own:.1f} of {w.cores} cores"
        what = "all cores saturated"
    other = w.busy_cores - own
    if other >= T.OTHER_LOAD_CORES:
        busy += f", other processes {other:.1f}"
    if own >= T.CPU_SATURATED_FRAC * cores:
        return CpuPattern("saturated", f"{what} {where} ({busy}; {per_core}): CPU-bound preprocessing")
    if cores >= 2 and T.ONE_CORE_LOW <= own <= T.ONE_CORE_HIGH:
        return CpuPattern("one_core", f"about one core busy {where} ({busy}; {per_core}): a serial stage or the Python GIL")
    if own < T.CPU_IDLE_CORES:
        if w.iowait_pct is not None and w.iowait_pct >= T.IOWAIT_NOTABLE_PCT:
            io = f", iowait {w.iowait_pct:.0f}%: disk reads"
        else:
            io = ": I/O latency or sleeping reads, not computation"
        return CpuPattern("idle", f"CPUs mostly idle {where} ({busy}; {per_core}){io}")
    return CpuPattern("partial", f"CPUs partly busy {where} ({busy}; {per_core})")


def _noisy(m: ModeSummary) -> bool:
    if not m.batches_per_sec or not m.batches_per_sec_ci:
        return True
    lo, hi = m.batches_per_sec_ci
    return (hi - lo) / 2 / m.batches_per_sec > T.WIDE_CI_REL


def _rate(m: ModeSummary) -> str:
    return f"{m.batches_per_sec:.1f} batches/s" if m.batches_per_sec else "no rate"


def decide(modes: dict[str, ModeSummary | None], gpu_expected: bool = False, *,
           buffers: Sequence[BufferEstimate] = (), ram_budget_bytes: int | None = None,
           handover: Handover | None = None, container: ContainerLimits | None = None,
           handover_missing: str | None = None) -> Verdict:
    """`modes` maps synthetic, pipeline, input_only, tuned to their summaries (None: not run).
    `handover`: what handing over an already-produced batch costs (analysis.handover), which
    tells a wait that is the hand-over from one that is the pipeline (verdict.handover_edge).
    `buffers`: the pipeline's shuffle buffers (analysis.buffers); `ram_budget_bytes`: the host
    memory the job may use (--ram-budget-mb), None for the host's whole memory (or the
    container's memory limit, when lower). `container`: this process's CPU and memory limits
    (samples.container); its CPU quota's throttling is evidence of its own (verdict.container).
    `handover_missing`: why the hand-over could not be timed (pipediag's own measurement failed)."""
    verdict = _decide(modes, gpu_expected, buffers=buffers, ram_budget_bytes=ram_budget_bytes, handover=handover,
                      container=container, handover_missing=handover_missing)
    return with_container(verdict, modes, container)


@dataclass
class _Reading:
    """What the input and step rules read from the modes, with the facts and evidence gathered so far
    (each rule below may add to them, and may lower confidence through `noisy`)."""

    synthetic: ModeSummary
    pipeline: ModeSummary
    input_only: ModeSummary | None
    wait: float
    gap: Ratio | None  # synthetic / pipeline rate: > 1, the fed step is slower than the free one
    headroom: Ratio | None  # input_only / synthetic rate: > 1, input alone outruns the step
    pattern: CpuPattern | None
    facts: dict[str, Any]
    evidence: list[str]
    noisy: bool


def _decide(modes: dict[str, ModeSummary | None], gpu_expected: bool, *, buffers: Sequence[BufferEstimate],
            ram_budget_bytes: int | None, handover: Handover | None, container: ContainerLimits | None,
            handover_missing: str | None = None) -> Verdict:
    present = [m for m in modes.values() if m is not None]
    memory = memory_verdict(present, buffers, ram_budget_bytes, container)  # 1. memory
    if memory is not None:
        return memory
    too_few = _too_few_steps(modes.get("synthetic"), modes.get("pipeline"))  # 2. enough to go on?
    if too_few is not None:
        return too_few
    reading = _read(modes, present, handover)
    found = _input_verdict(reading, handover, handover_missing)  # 3. input
    if found is not None:
        return found
    if not _free_step_switched(reading):
        _free_step_slower_than_fed(reading)
    return _step_verdict(reading, gpu_expected)  # 4-6. the step is the limit


def _too_few_steps(synthetic: ModeSummary | None, pipeline: ModeSummary | None) -> Verdict | None:
    """2. inconclusive when synthetic or pipeline mode timed fewer than MIN_STEPS steps; None otherwise."""
    for name, m in (("synthetic", synthetic), ("pipeline", pipeline)):
        if m is None or m.steps < T.MIN_STEPS:
            got = 0 if m is None else m.steps
            return Verdict(
                "inconclusive", "low", "not enough steps were measured to decide",
                (f"{name} mode timed {got} steps; at least {T.MIN_STEPS} are needed",),
                reason=f"too few steps in {name} mode (raise --max-seconds, or the step is very slow)",
            )
    return None


def _read(modes: dict[str, ModeSummary | None], present: list[ModeSummary], handover: Handover | None) -> _Reading:
    """The wait, the rate ratios, the input side's CPU pattern, and the evidence every verdict below opens with."""
    synthetic, pipeline = modes.get("synthetic"), modes.get("pipeline")
    input_only = modes.get("input_only")
    wait = pipeline.input_wait_frac or 0.0
    gap = rate_ratio(synthetic, pipeline)  # > 1: the fed step is slower than the free one
    headroom = rate_ratio(input_only, synthetic)  # > 1: input alone outruns the step
    side = input_side_cpu(pipeline, input_only)
    pattern = classify_cpu(side) if side else None
    facts = {
        "input_wait_frac": wait,
        "synthetic_over_pipeline": gap.value if gap else None,
        "input_only_over_synthetic": headroom.value if headroom else None,
        **handover_facts(handover, synthetic),
    }
    evidence = [
        f"the step waited for input {pct(wait)} of the time in pipeline mode",
        f"synthetic (free input) {_rate(synthetic)} vs pipeline {_rate(pipeline)}"
        + (f": {gap.value:.2f}x" if gap else ""),
    ]
    if input_only and input_only.batches_per_sec:
        evidence.append(f"input alone (no step) {_rate(input_only)}"
                        + (f" = {headroom.value:.2f}x the step's free rate" if headroom else ""))
    noisy = _noisy(synthetic) or _noisy(pipeline)
    contended = [m for m in present if contended_by_others(m)]
    if contended:
        busiest = max(contended, key=other_load_cores)
        noisy = True
        evidence.append(
            f"other processes kept {other_load_cores(busiest):.1f} cores busy during {busiest.name} mode, with "
            f"{host_idle_cores(busiest):.1f} of {len(busiest.cpu_per_core_pct)} cores left idle: the timings are "
            "contended, so confidence is lowered"
        )
    return _Reading(synthetic, pipeline, input_only, wait, gap, headroom, pattern, facts, evidence, noisy)


def _input_verdict(r: _Reading, handover: Handover | None, handover_missing: str | None) -> Verdict | None:
    """3. input: the input side alone too slow, the host edge, a wait that costs throughput, or CPU
    contention, in that order; None when none holds (then the step is the limit)."""
    starved = _starved(r)
    if starved is not None:
        return starved
    # The host edge: the wait is the hand-over of each batch, not the pipeline (handover_edge.py).
    edge = handover_edge(r.synthetic, r.pipeline, r.input_only, handover)
    if edge is not None:
        r.facts.update(edge.facts)
        r.evidence.extend(edge.evidence)
    if edge is not None and edge.host:
        confidence, headline = host_edge_verdict(edge, r.synthetic, handover, r.noisy)
        if r.synthetic.gpu_util_pct is not None:
            r.evidence.append(f"GPU busy {r.synthetic.gpu_util_pct:.0f}% with free input (synthetic mode, NVML utilization)")
        return Verdict("host", confidence, headline, tuple(r.evidence), cpu_pattern=r.pattern, facts=r.facts)
    waiting = _waiting(r, explained=edge is not None and edge.explains_wait)
    if waiting is not None and handover_missing is not None:
        # The hand-over edge could have explained this wait, but its timing failed: not a sure verdict.
        outruns = r.headroom is not None and r.headroom.value >= T.INPUT_HEADROOM and r.headroom.clearly_above_one
        return without_handover(waiting, handover_missing, r.headroom.value if r.headroom else None, outruns)
    if waiting is not None:
        return waiting
    return _cpu_contention(r)


def _starved(r: _Reading) -> Verdict | None:
    """Input-bound when the input side alone cannot keep up with the free step."""
    starved = (
        r.headroom is not None and r.headroom.clearly_below_one and r.gap is not None
        and r.gap.value >= T.GAP_SIGNIFICANT and r.gap.clearly_above_one
    )
    if not starved:
        return None
    if r.pattern:
        r.evidence.append(r.pattern.text)
    return Verdict(
        "input", "low" if r.noisy else "high",
        "input-bound: the pipeline alone delivers fewer batches than the step could take",
        tuple(r.evidence), cpu_pattern=r.pattern, facts=r.facts,
    )


def _waiting(r: _Reading, *, explained: bool) -> Verdict | None:
    """Input-bound when the step waits for the next batch, unless the wait cost no throughput or
    the hand-over `explained` it."""
    wait, gap = r.wait, r.gap
    free_wait = wait_without_slowdown(wait, gap, r.headroom) if wait >= T.INPUT_WAIT_MODERATE else None
    if free_wait is not None:
        r.facts["wait_costs_no_throughput"] = True
        r.evidence.append(free_wait)
    if wait < T.INPUT_WAIT_MODERATE or free_wait is not None or explained:
        return None
    high = wait >= T.INPUT_WAIT_HIGH
    confidence = "high" if high and gap is not None and gap.clearly_above_one else ("medium" if high else "low")
    if r.noisy:
        confidence = lower(confidence)
    if r.pattern:
        r.evidence.append(r.pattern.text)
    if r.headroom and r.headroom.value >= T.INPUT_HEADROOM:
        r.evidence.append("the input side alone is fast enough: it is not overlapped with the step (prefetch)")
    degree = "highly" if high else "moderately"
    return Verdict(
        "input", confidence, f"{degree} input-bound: the step waits for the next batch",
        tuple(r.evidence), cpu_pattern=r.pattern, facts=r.facts,
    )


def _cpu_contention(r: _Reading) -> Verdict | None:
    """Input-bound through CPU contention: the step itself slower beside the pipeline, unless the
    pipeline was too light to cause it, cores sat idle, or the readings are on the line."""
    synthetic, pipeline = r.synthetic, r.pipeline
    contention = read_contention(r.gap, synthetic, pipeline)
    slowed = contention is not None and contention.decided
    near = contention is not None and contention.on_edge
    light = pipeline_cpu_at_fed_rate(synthetic, pipeline, r.input_only) if slowed or near else None
    if light is not None and light.too_light:
        # The pipeline barely ran: at the fed rate it used too little CPU to take the line's
        # slowdown from the step, so the reading cannot make this contention, on its line or
        # off it, and is not measured again (no facts.edges).
        r.facts["pipeline_cores_at_fed_rate"] = light.cores
        if all(e.above for e in contention.edges):  # so when decided, which needs both above
            # Slower by the line or more: the slowdown came from elsewhere.
            r.noisy = True
            r.evidence.append(light.text(pipeline, synthetic))
        else:
            r.evidence.append(light.near_line_text(contention))
        slowed = False
    elif slowed and pipeline.cpu_per_core_pct and idle_cores(pipeline) >= T.CONTENDED_IDLE_CORES:
        # Slower beside the pipeline, yet cores sat idle: nothing competed for them. The step's
        # own speed varied (seen on the H200: a Python-bound step, 14 of 16 cores idle).
        r.noisy = True
        r.evidence.append(
            f"the step itself took {pipeline.compute_ms_median:.2f} ms beside the pipeline vs "
            f"{synthetic.compute_ms_median:.2f} ms alone, yet {idle_cores(pipeline):.1f} of "
            f"{pipeline.cores:g} cores were idle: not CPU contention; the step's speed varied, "
            "so confidence is lowered"
        )
        slowed = False
    elif contention is not None and contention.on_edge:
        # Neither side of the line is sure: measured longer already (diagnose does, once), so
        # say how close it was and do not call contention on a reading noise could move.
        r.noisy = True
        r.facts["edges"] = [e.to_dict() for e in contention.edges]
        r.evidence.append(
            f"the step itself took {pipeline.compute_ms_median:.2f} ms beside the pipeline vs "
            f"{synthetic.compute_ms_median:.2f} ms alone; {CALLED_WHEN}, but "
            + "; ".join(e.text() for e in contention.edges if e.straddles)
            + ": within its run-to-run spread of the line, so not decided on it; confidence lowered"
        )
        slowed = False
    if not slowed:
        return None
    r.facts["edges"] = [e.to_dict() for e in contention.edges]
    r.evidence.append(
        f"the step itself took {pipeline.compute_ms_median:.2f} ms beside the pipeline vs "
        f"{synthetic.compute_ms_median:.2f} ms alone: preprocessing competes with it for the CPU"
    )
    if pipeline.cpu_util_pct is not None:
        r.evidence.append(f"CPU use in pipeline mode {pipeline.cpu_util_pct:.0f}% of all cores")
    return Verdict(
        "input", "medium", "input-bound through CPU contention: preprocessing slows the step down",
        tuple(r.evidence), cpu_pattern=r.pattern, facts=r.facts,
    )


def _free_step_switched(r: _Reading) -> bool:
    """Before the step is called the limit: a free step that ran at two speeds, mostly the slow one
    (analysis.regimes), has a free rate and median from its slow stretches, which understate what
    the step does when nothing slows it. When at its fast stretches' rate the input side could be
    the limit (input alone slower than that rate, or the fed step that much slower than it with a
    pipeline heavy enough to cause it), the verdict says so and its confidence drops; diagnose
    measures the two modes again first (facts.free_step_regimes). Otherwise the speeds change nothing.
    True when it said so."""
    regimes = r.synthetic.regimes
    if regimes is None or not regimes.median_in_slow or not r.pipeline.batches_per_sec:
        return False
    fast = regimes.fast_per_sec
    alone = _alone_slower_than(r, fast)
    light = pipeline_cpu_at_fed_rate(r.synthetic, r.pipeline, r.input_only)
    fed_slower = fast / r.pipeline.batches_per_sec
    if alone is not None:
        why = alone
    elif fed_slower >= T.GAP_SIGNIFICANT and not (light is not None and light.too_light):
        why = (f"the fed step ({r.pipeline.batches_per_sec:.1f} batches/s) would be {fed_slower:.2f}x slower than it, "
               f"over the {T.GAP_SIGNIFICANT:.2f}x contention line")
    else:
        return False
    r.noisy = True
    r.facts["free_step_regimes"] = asdict(regimes)
    r.evidence.append(
        f"with free input the step ran at two speeds, {regimes.text()}: its input did not change, so the machine or "
        f"the step's own threads did; the free rate and median come from the slow stretches, and at the fast stretches' "
        f"{fast:.1f} steps/s, {why}, so the input side may be the limit: confidence lowered"
    )
    return True


def _alone_slower_than(r: _Reading, rate: float) -> str | None:
    """`input alone (N batches/s) would not keep up with it` when input_only mode ran slower than `rate`."""
    alone = r.input_only.batches_per_sec if r.input_only is not None else None
    if alone is None or alone >= rate:
        return None
    return f"input alone ({alone:.1f} batches/s) would not keep up with it"


def _free_step_slower_than_fed(r: _Reading) -> None:
    """Before the step is called the limit: the step's own time beside the pipeline clearly under
    its time alone (>= 1.15x faster fed, the two medians' intervals apart) says synthetic mode was
    timed in a slower stretch of the machine than pipeline mode, since real batches rarely make a
    step faster than a constant one; the free rate then understates the step. When at the fed
    step's own speed the input side could be the limit (input alone slower than it, or a pipeline
    heavy enough to slow the step by the contention line), the verdict says so and its confidence
    drops; diagnose measures the two modes again first (facts.free_step_slower_than_fed)."""
    s, p = r.synthetic, r.pipeline
    alone_over_fed = ratio_interval(s.compute_ms_median, s.compute_ms_median_ci, p.compute_ms_median,
                                    p.compute_ms_median_ci)
    if alone_over_fed is None or alone_over_fed[1] is None:
        return
    ratio, low, _ = alone_over_fed
    if ratio < T.GAP_SIGNIFICANT or low <= 1.0:  # low > 1: the two medians' intervals apart
        return
    own = 1000.0 / p.compute_ms_median
    light = pipeline_cpu_at_fed_rate(s, p, r.input_only)
    why = _alone_slower_than(r, own)
    if why is None and light is not None and light.too_light:
        return
    if why is None and light is None:
        why = "the pipeline's CPU at the fed rate is not known, so contention cannot be ruled out"
    elif why is None:
        why = (f"the pipeline ({light.cores:.2f} cores at the fed rate) is heavy enough to slow a step that fast by the "
               f"{T.GAP_SIGNIFICANT:.2f}x contention line")
    r.noisy = True
    r.facts["free_step_slower_than_fed"] = {"free_ms": s.compute_ms_median, "fed_ms": p.compute_ms_median,
                                            "ratio": ratio}
    r.evidence.append(
        f"the step itself took {p.compute_ms_median:.2f} ms beside the pipeline and {s.compute_ms_median:.2f} ms alone "
        f"({ratio:.2f}x slower alone, the intervals apart): synthetic mode was timed in a slower stretch of the machine "
        f"than pipeline mode, so the free rate understates the step; at the fed step's own {own:.1f} steps/s, {why}, "
        "so the input side may be the limit: confidence lowered"
    )


def _step_verdict(r: _Reading, gpu_expected: bool) -> Verdict:
    """4-6. the step is the limit: GPU memory pressure, host overhead or compute."""
    synthetic, evidence, facts = r.synthetic, r.evidence, r.facts
    gpu_util = synthetic.gpu_util_pct
    full = memory_full(synthetic)
    if full is not None:
        text, confidence = full
        evidence.append(text)
        return Verdict("memory", confidence, "GPU memory is nearly full", tuple(evidence), facts=facts)
    confidence = "low" if r.noisy else "high"
    if gpu_util is not None:
        source = " (driver samples)" if synthetic.gpu and synthetic.gpu.util_source == "driver_samples" else ""
        evidence.append(f"GPU busy {gpu_util:.0f}% with free input (synthetic mode, NVML utilization{source})")
        gpm = synthetic.gpu.gpm if synthetic.gpu else None
        if gpm is not None:
            evidence.append(gpm_text(gpm))
            facts.update(gpm_facts(gpm, gpu_util))
        elif synthetic.gpu is not None:
            evidence.append(f"no GPM ({synthetic.gpu.gpm_reason}): how much of the chip worked is unknown, and NVML "
                            "counts the GPU busy while any kernel runs, however small")
        on_line = [e for e in gpu_edges(synthetic, gpm, gpu_util) if e.straddles]
        if on_line:
            # A reading within its spread of a line could land on the other side next run: the
            # verdict still follows the reading, but says how close it was, with less confidence.
            confidence = lower(confidence)
            facts["edges"] = facts.get("edges", []) + [e.to_dict() for e in on_line]
            evidence.append("; ".join(e.text() for e in on_line)
                            + ": within its spread of the line, so another run could read the other side; "
                            "confidence lowered")
        if gpu_util < T.GPU_BUSY_FOR_COMPUTE_PCT:
            return Verdict(
                "host", confidence,
                "host-bound: even with free input the GPU is mostly idle (per-step overhead)",
                tuple(evidence), facts=facts,
            )
        return busy_gpu_verdict(gpm, gpu_util, confidence, evidence, facts)
    reason = synthetic.gpu_util_reason or "no GPU readings"
    evidence.append(f"no GPU data ({reason}): the step ran on the CPU, so host and compute cannot be told apart")
    return Verdict(
        "compute", lower(confidence) if gpu_expected else confidence,
        "compute-bound: the step itself is the limit, not the input",
        tuple(evidence), facts=facts,
    )


def wait_without_slowdown(wait: float, gap: Ratio | None, headroom: Ratio | None) -> str | None:
    """A wait that cost no throughput, or None. The step waited (>= 5% of pipeline mode's time),
    yet the fed step ran at the free step's rate (synthetic / pipeline: its 95% interval reaches 1)
    and the pipeline alone clearly outran the free step (input_only / synthetic >= INPUT_HEADROOM,
    its interval above 1). An input limit shows as fewer batches per second; a wait that costs none
    is the step's own jitter, or the fetch of a batch that was ready, not the pipeline holding the
    step back (real/kerasio_timeseries: 10% waiting, fed at 0.99x the free rate, input alone 3.8x).
    Unknown intervals (None) do not exempt: the waiting rules then apply as before."""
    if gap is None or gap.low is None or headroom is None:
        return None
    if gap.clearly_above_one or not headroom.clearly_above_one or headroom.value < T.INPUT_HEADROOM:
        return None
    return (f"the wait cost no throughput: the fed step ran at {1 / gap.value:.2f}x the free rate "
            f"(free over fed {gap.value:.2f}x, 95%: {gap.low:.2f}-{gap.high:.2f}x, reaching 1) while the pipeline "
            f"alone delivered {headroom.value:.1f}x the free step: the wait is the step's own jitter or the fetch "
            "of a ready batch, not an input limit")


def nothing_left_to_change(verdict: Verdict, left_out: Sequence[tuple[str, str | None, str]],
                           candidates: int | None) -> Verdict:
    """A compute verdict gains, as evidence, that the input side has nothing left to change when
    the tuning rules found no candidate at all (`candidates` == 0): the pipeline already caches,
    runs its maps in parallel, batches before its vectorizable maps and overlaps with the step.
    `left_out`: (kind, stage, reason) of each change the rules left out. A verdict that is not
    compute, or a run whose tuning was not planned (None), is returned as it is."""
    if verdict.bottleneck != "compute" or candidates != 0:
        return verdict
    reasons = [f"{kind}{f' at `{stage}`' if stage else ''}: {reason}" for kind, stage, reason in left_out
               if kind != "threading" and reason]
    text = "no input-side change left to make: pipediag's tuning rules found nothing to change in the pipeline"
    if reasons:
        text += " (" + "; ".join(reasons) + ")"
    return replace(verdict, evidence=verdict.evidence + (text,),
                   facts={**verdict.facts, "input_changes_left": 0})

