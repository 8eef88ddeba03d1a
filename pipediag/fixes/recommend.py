"""From the verdict and the tuned mode's results to a list of fixes, each saying what backs it.

A fix is *measured* when a run with that change made training faster than the user's pipeline,
the 95% intervals apart and by at least 5%. With the ablation, that run is the change alone, so
each fix carries its own speedup (and the report gives all changes together beside it). Without
one (a single change, or an old report), the tuned mode's speedup is shared by the changes it
applied, and the basis says so. A speedup is not a gain when the run that measured it fed the
step faster than free input did (synthetic mode, beyond both intervals: drift) or when the
verdict is compute-bound (nothing on the input side to gain): it is withheld with that reason.
Changes that were applied but gained nothing are not recommended: they are listed as tried. A fix that pipediag could not measure says so in
`basis`, and is offered only when a measurement points at it (the verdict, the CPU pattern, a
size estimate).
tf.data service is offered only when the cores stay full while the step waits, after tuning or with
nothing left to tune, with the workers it would take and the `pipediag scale` command (fixes.service).
A memory verdict about the pipeline's own shuffle buffers gets a smaller buffer (with file-order
shuffling for the randomness), and nothing that adds buffers: tuned-mode changes are listed as tried.
A stage that runs Python for every element (a generator, `tf.py_function`) gets the advice to do that
work for whole batches in TensorFlow ops, when a measurement points at it (the anatomy's slow stage,
or about one core busy while the step waited: the GIL), the CPUs were not idle (Python waiting on
I/O frees the GIL), and no measured change at that stage helped.
An input verdict whose batches are copied to the device before each step, that copy a good share of
the step and training clearly below the pipeline alone, also gets the copy made ahead (fixes.device_copy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pipediag.analysis.ablation import MIN_GAIN, Ablation
from pipediag.analysis.buffers import SUGGESTED_BUFFER_SHARE, BufferEstimate, shuffle_buffers
from pipediag.analysis.modes import ModeSummary
from pipediag.fixes import catalog
from pipediag.fixes.cpu import cores_needed
from pipediag.fixes.device_copy import copy_in_line_basis
from pipediag.fixes.eager import compiled_step_advice
from pipediag.fixes.measured import Measured, alone_basis, interval_text, measure_changes, under_contention
from pipediag.fixes.service import service_basis
from pipediag.records.change import Change
from pipediag.records.container import ContainerLimits
from pipediag.records.kinds import FixKind
from pipediag.records.record import DictRecord
from pipediag.records.stage import Stage
from pipediag.records.step import EagerUse
from pipediag.records.verdict import (
    GPU_LIMIT_MEMORY_BANDWIDTH,
    GPU_LIMIT_SMALL_KERNELS,
    MEMORY_SOURCE_BUFFERS,
    Verdict,
)
from pipediag.verdict.container import throttled
from pipediag.verdict.handover_edge import HOST_LIMIT_HANDOVER

__all__ = ["COMPUTE_BASIS", "MIN_GAIN", "Fix", "Recommendation", "recommend"]

COMPUTE_BASIS = "not measured: the step is the limit, not the input; input changes will not help"
STEPS_PER_CALL_BASIS = ("not measured: the host's work for each call of the compiled step (dispatch, launches, "
                        "reading its results) is paid once for several batches")
STEPS_PER_CALL_AFTER_TF_FUNCTION = ("not measured; after tf_function, which makes the step a compiled call: the "
                                    "host's work for each call (dispatch, launches, reading its results) is then "
                                    "paid once for several batches")
STEPS_PER_CALL_LOOP_CODE = ("model.compile(..., steps_per_execution=8)  # Keras fit: 8 batches per compiled call\n"
                            "@tf.function  # a loop of your own: several steps per call, the iterator read inside it\n"
                            "def train_steps(iterator, steps):\n"
                            "    for _ in tf.range(steps):\n"
                            "        train_step(next(iterator))")


@dataclass(frozen=True)
class Fix(DictRecord):
    _tuples = ("speedup_ci",)  # from JSON's lists back to a tuple
    kind: FixKind
    stage: str | None
    title: str
    code: str
    measured_speedup: float | None  # tuned / pipeline throughput, when measured
    speedup_ci: tuple[float, float] | None
    basis: str  # what supports it: the measurement, or the reason it is offered unmeasured


def _fix(kind: str, stage: str | None, basis: str, speedup=None, ci=None, **details) -> Fix:
    return Fix(
        kind=kind,
        stage=stage,
        title=catalog.title(kind, stage, details.get("framework"), bool(details.get("python")), details.get("form")),
        code=catalog.code(kind, stage, **details),
        measured_speedup=speedup,
        speedup_ci=ci,
        basis=basis,
    )


@dataclass(frozen=True)
class Recommendation:
    fixes: tuple[Fix, ...]
    tried: tuple[Change, ...]  # applied in the tuned mode without a measurable gain
    # Speedups that were measured but are not taken as gains, each with the reason (drift above
    # the free-input ceiling, a compute-bound step): the diagnosis prints them as notes.
    withheld: tuple[str, ...] = ()


def recommend(
    verdict: Verdict,
    modes: dict[str, ModeSummary | None],
    changes: list[Change],
    *,
    gpu_present: bool,
    tf_gpu_without_memory_growth: bool = False,
    framework: str | None = None,
    ablation: Ablation | None = None,
    stages: Sequence[Stage] = (),
    scale_command: str | None = None,
    slow_stage: str | None = None,
    container: ContainerLimits | None = None,
    step_xla: bool | None = None,
    step_eager: EagerUse | None = None,
) -> Recommendation:
    """`framework`: the step's (jax, torch, tensorflow), so fixes to the step are written for it.
    `slow_stage`: the stage the anatomy found slowest (its label), if it named one.
    `container`: this process's CPU and memory limits; a mode that ran at its CPU quota gets
    the fix that raises it (or moves the work off the host). `step_xla`: the step is compiled with
    XLA already (True), or not (False), or unknown (None): XLA is not offered to a step that has it.
    `step_eager`: how a TensorFlow step ran in synthetic mode; an eager one that limits training
    (compute, host) gets tf.function first, in place of XLA (fixes.eager)."""
    fw = framework if framework in ("jax", "torch") else "tensorflow"
    m = measure_changes(verdict, modes, changes, ablation)
    if verdict.bottleneck == "memory" and verdict.facts.get("memory_source") == MEMORY_SOURCE_BUFFERS:
        # More buffers (prefetch, parallel calls, a cache) are the wrong way: whatever the tuned
        # mode gained in speed is not the problem here.
        return Recommendation(tuple(_buffer_fixes(verdict, stages)), tuple(m.applied), tuple(m.withheld))
    tried, withheld = tuple(m.applied), ()
    if verdict.bottleneck == "input" or m.measured:
        fixes, tried = _measured_fixes(verdict, m, changes, modes, stages, slow_stage, scale_command)
    elif verdict.bottleneck == "memory":
        fixes = _memory_fixes(verdict, modes, fw, gpu_present, tf_gpu_without_memory_growth)
    elif verdict.bottleneck == "host" and verdict.facts.get("host_limit") == HOST_LIMIT_HANDOVER:
        fixes = _handover_fixes(verdict, fw, stages)
    elif verdict.bottleneck == "host":
        fixes, withheld = _compiled_first(_host_fixes(verdict, fw, step_xla), step_eager, fw)
    elif verdict.bottleneck == "compute":
        fixes, withheld = _compiled_first(_compute_fixes(verdict, fw, gpu_present, step_xla), step_eager, fw)
    else:
        fixes = []
    if m.measured and verdict.bottleneck == "host" and verdict.facts.get("host_limit") == HOST_LIMIT_HANDOVER:
        fixes.extend(_handover_fixes(verdict, fw, stages))  # after what the tuned mode measured
    copy_basis = copy_in_line_basis(verdict, modes.get("pipeline"), modes.get("input_only"))
    if copy_basis is not None:
        fixes.append(_fix("device_prefetch", None, copy_basis, framework=fw))
    quota = _quota_fix(verdict, modes, container, scale_command)
    if quota is not None:
        fixes.append(quota)
    return Recommendation(tuple(under_contention(fixes, verdict)), tried, tuple(m.withheld) + withheld)


def _compiled_first(fixes: list[Fix], eager: EagerUse | None, fw: str) -> tuple[list[Fix], tuple[str, ...]]:
    """A TensorFlow step that ran eagerly: tf.function first, and no XLA (it compiles a graph that
    tf.function makes), or, where wrapping it measured no gain, a note and the fixes as they were."""
    advice = compiled_step_advice(eager) if fw == "tensorflow" else None
    if advice is None:
        return fixes, ()
    if not advice.offered:
        return fixes, (advice.basis,)
    first = _fix("tf_function", None, advice.basis, speedup=advice.speedup, ci=advice.speedup_ci)
    return [first] + [_after_tf_function(f) for f in fixes if f.kind != "xla"], ()


def _after_tf_function(fix: Fix) -> Fix:
    """A fix given after tf_function that needs the compiled step it makes: an eager step has no
    compiled call to give several batches yet, so its basis says the order."""
    if fix.kind != "steps_per_call":
        return fix
    return replace(fix, basis=STEPS_PER_CALL_AFTER_TF_FUNCTION, code=STEPS_PER_CALL_LOOP_CODE)


def _buffer_fixes(verdict: Verdict, stages: Sequence[Stage]) -> list[Fix]:
    """A smaller shuffle buffer for each buffer that is the verdict's stage or over its share of the budget."""
    fixes: list[Fix] = []
    budget = verdict.facts.get("ram_budget_bytes")
    for b in sorted(shuffle_buffers(stages), key=lambda b: b.total_bytes, reverse=True):
        if budget and (b.stage == verdict.stage or b.total_bytes > SUGGESTED_BUFFER_SHARE * budget):
            fixes.append(_shuffle_buffer_fix(b, budget, verdict.facts.get("ram_budget_source")))
    return fixes


def _measured_fixes(verdict: Verdict, m: Measured, changes: list[Change], modes: dict[str, ModeSummary | None],
                    stages: Sequence[Stage], slow_stage: str | None,
                    scale_command: str | None) -> tuple[list[Fix], tuple[Change, ...]]:
    """The changes that gained (alone, on top, or all together), the ones offered unmeasured, and for an
    input verdict the Python and service fixes; with the changes tried without a gain."""
    fixes: list[Fix] = []
    tried: tuple[Change, ...] = ()
    applied, effects, together = m.applied, m.effects, m.together
    if m.gains or m.on_top:
        for c in sorted(m.gains, key=lambda c: effects[c.key].speedup, reverse=True):
            e = effects[c.key]
            fixes.append(_fix(c.kind, c.stage, alone_basis(e, together, len(applied)), e.speedup, e.speedup_ci,
                              **c.details))
        for c in sorted(m.on_top, key=lambda c: effects[c.key].without_speedup, reverse=True):
            e = effects[c.key]
            alone = "" if e.speedup is None else f"; alone {e.speedup:.2f}x"
            fixes.append(_fix(c.kind, c.stage, f"measured on top of the other changes: all together ran "
                              f"{e.without_speedup:.2f}x the run without it{interval_text(e.without_ci)}{alone}",
                              e.without_speedup, e.without_ci, **c.details))
        tried = tuple(c for c in applied if c not in m.gains and c not in m.on_top)
    elif m.together_gain:
        fixes.extend(_together_fixes(m))
    else:
        tried = tuple(applied)
    # Not settled by the measurement (the control runs drifted apart): offered unmeasured, with why.
    for c, basis in m.unsettled:
        fixes.append(_fix(c.kind, c.stage, basis, **c.details))
    tried = tuple(c for c in tried if all(c is not u for u, _ in m.unsettled))
    for c in changes:
        if c.kind == "cache" and not c.applied and c.reason and "snapshot" in c.reason:
            fixes.append(_fix("snapshot", c.stage, f"not measured: {c.reason}", **c.details))
        if c.kind == "decode_crop" and not c.applied and c.details.get("by_hand"):
            # tensorflow-datasets' decode that pipediag could not move: the user skips it with decoders=
            fixes.append(_fix("decode_crop", c.stage, f"not measured: pipediag could not rebuild the pipeline "
                              f"that way ({c.reason}); tfds' decoders= does it in your code", **c.details))
    if verdict.bottleneck == "input":
        fixes.extend(_python_fixes(verdict, stages, slow_stage, fixes))
        service = _service_fix(verdict, modes, changes, stages, scale_command)
        if service is not None:
            fixes.append(service)
    return fixes, tried


def _together_fixes(m: Measured) -> list[Fix]:
    """Every applied change, backed by the tuned pipeline's speedup with all of them together."""
    applied, together = m.applied, m.together
    alone_runs = any(e is not None and e.basis == "alone" for e in m.effects.values())
    if len(applied) == 1:
        note = ""
    elif alone_runs:
        note = f" (all {len(applied)} changes together; alone, none gained clearly)"
    else:
        note = f" (measured together with {len(applied) - 1} other change(s))"
    ci = (together.low, together.high) if together.low is not None and together.high is not None else None
    return [
        _fix(
            c.kind, c.stage,
            f"measured: the tuned pipeline ran {together.value:.2f}x the original{interval_text(ci)}{note}",
            together.value, (together.low, together.high), **c.details,
        )
        for c in applied
    ]


def _memory_fixes(verdict: Verdict, modes: dict[str, ModeSummary | None], fw: str, gpu_present: bool,
                  tf_gpu_without_memory_growth: bool) -> list[Fix]:
    """Out of (or nearly out of) memory: a smaller batch, gradient accumulation, and the framework's memory levers."""
    fixes: list[Fix] = []
    oom = "oom_mode" in verdict.facts
    what = "the step ran out of memory at this batch size" if oom else "memory is nearly full at this batch size"
    fixes.append(_fix("batch_size", None, f"{what}; halve it",
                      code="ds = ds.batch(BATCH_SIZE // 2)  # or keep it, with gradient accumulation below"))
    fixes.append(_fix("gradient_accumulation", None, "keeps the effective batch size (and the training dynamics) "
                      "while each step holds half the activations", framework=fw))
    if gpu_present:
        fixes.append(_fix("mixed_precision", None, "half-width activations need about half the memory", framework=fw))
    if fw == "jax" and gpu_present:
        fixes.append(_fix("allocator", None, _jax_allocator_basis(modes), framework=fw))
    if fw == "torch" and gpu_present:
        fixes.append(_fix("allocator", None, "not measured: fragmentation can fail an allocation that would fit",
                          framework=fw))
    if tf_gpu_without_memory_growth and fw == "tensorflow":
        fixes.append(_fix("memory_growth", None, "TensorFlow reserves all GPU memory by default, hiding real use"))
    return fixes


def _host_fixes(verdict: Verdict, fw: str, step_xla: bool | None) -> list[Fix]:
    """Host-bound (per-step overhead or small kernels): larger batches; for per-step overhead,
    several batches per compiled call; XLA unless the step has it already."""
    small_kernels = verdict.facts.get("gpu_limit") == GPU_LIMIT_SMALL_KERNELS
    why = ("not measured: the GPU is busy but its kernels fill few SMs; larger batches make larger kernels"
           if small_kernels else "not measured: with free input the GPU is mostly idle; larger batches "
           "spread the per-step overhead")
    fixes = [_fix("batch_size", None, why, code="ds = ds.batch(2 * BATCH_SIZE)")]
    if not small_kernels:
        fixes.append(_fix("steps_per_call", None, STEPS_PER_CALL_BASIS
                          + (" (the step is compiled with XLA already)" if step_xla else ""), framework=fw))
    if not step_xla:
        fixes.append(_fix("xla", None, "not measured: fuses the step into fewer, larger kernel launches", framework=fw))
    return fixes


def _compute_fixes(verdict: Verdict, fw: str, gpu_present: bool, step_xla: bool | None) -> list[Fix]:
    """Compute-bound: fixes to the step by what limits the GPU (memory bandwidth, idle SMs, or the
    math); XLA unless the step has it already."""
    fixes: list[Fix] = []
    if verdict.facts.get("gpu_limit") == GPU_LIMIT_MEMORY_BANDWIDTH:
        fixes.append(_fix("mixed_precision", None, "not measured: the step is memory-bandwidth-bound; 16-bit "
                          "values halve the bytes each step moves", framework=fw))
        fixes.append(_fix("xla", None, "not measured: fusing element-wise work keeps intermediates on chip "
                          "instead of a round trip through DRAM each", framework=fw))
    elif verdict.facts.get("gpu_underused"):
        fixes.append(_fix("batch_size", None, "not measured: GPM shows most SMs idle while the step limits "
                          "training; larger batches make larger kernels", code="ds = ds.batch(2 * BATCH_SIZE)"))
        fixes.append(_fix("xla", None, "not measured: fuses the step into fewer, larger kernel launches",
                          framework=fw))
    else:
        if gpu_present:
            fixes.append(_fix("mixed_precision", None, "not measured: the step is the limit; tensor cores run "
                              "bfloat16 several times faster than float32", framework=fw))
        fixes.append(_fix("xla", None, COMPUTE_BASIS, framework=fw))
    return [f for f in fixes if not (step_xla and f.kind == "xla")]


def _quota_fix(verdict: Verdict, modes: dict[str, ModeSummary | None], container: ContainerLimits | None,
               scale_command: str | None) -> Fix | None:
    """A mode ran at the container's CPU quota (throttled in THROTTLED_FRAC of its periods or
    more; verdict.container): more cores than the quota are what the work needs, and no tf.data
    change makes CPU time that the quota does not give. Not for a memory verdict or no verdict."""
    name = verdict.facts.get("throttled_mode")
    if container is None or container.quota_cores is None or name is None:
        return None
    if verdict.bottleneck in ("memory", "inconclusive"):
        return None
    t = throttled(modes.get(name))
    if t is None:
        return None
    needed = cores_needed(modes)
    whole = math.ceil(needed - 1e-9) if needed is not None else None
    basis = (f"not measured: throttled {100 * t.throttled_frac:.0f}% of periods in {name} mode: "
             f"{container.cpu_text()}, limits the {'step' if name == 'synthetic' else 'pipeline'}")
    if needed is not None and whole > container.quota_cores:
        capped = throttled(modes.get("synthetic")) is not None
        basis += (f"; feeding the step at its free rate takes {'at least ' if capped else ''}about {needed:.1f} cores "
                  "(the step's own CPU with free input, plus the pipeline's CPU per batch measured alone, times the "
                  "free rate)")
        if capped:
            basis += ("; a lower bound: the quota capped the step itself too (synthetic mode throttled), so its own "
                      "CPU and free rate were measured below what more cores would give")
        if needed > container.host_cores:
            basis += (f"; more than this host's {container.host_cores} cores: only tf.data service, on other hosts' "
                      "CPUs, can give that much")
    else:
        whole = None  # the estimate does not exceed the quota, or is unknown: no number to give
    return _fix("cpu_quota", None, basis, cores_needed=whole, quota_cores=container.quota_cores,
                tensorflow_cores=container.affinity_cores, command=scale_command)


def _handover_fixes(verdict: Verdict, fw: str | None, stages: Sequence[Stage] = ()) -> list[Fix]:
    """Handing each batch over costs as much as a good share of the step: do more work per
    hand-over, or hide it. None is measured here (each changes the user's training loop)."""
    if verdict.facts.get("handover_is_distributed_read"):
        return _distributed_handover_fixes(verdict.facts["distributed_handover_ms"],
                                           bool(verdict.facts.get("distributed_partial_batches")), stages)
    share = verdict.facts.get("handover_over_free_step")
    per = f" ({share:.2f}x the free step)" if share is not None else ""
    return [
        _fix("batch_size", None, f"not measured: each hand-over costs about the same whatever the batch holds{per}; "
             "twice the batch halves the hand-overs per example", code="ds = ds.batch(2 * BATCH_SIZE)"),
        _fix("steps_per_call", None, "not measured: one hand-over feeds several steps inside one compiled call",
             framework=fw),
        _fix("device_prefetch", None, "not measured: the next batch's copy to the device overlaps the step "
             "instead of preceding it", framework=fw),
        _fix("batch_format", None, "not measured: get_next and the conversion cost per array; fewer, smaller "
             "arrays cost less to hand over"),
    ]


def _distributed_handover_fixes(through_ms: float, partial: bool, stages: Sequence[Stage]) -> list[Fix]:
    """The hand-over is tf.distribute's iterator (verdict.handover_edge): a cheaper call of it where
    the loop's next() takes TensorFlow's partial-batch path (`partial`: batches of one shape, named
    at the user's last batch stage), and fewer calls of it. No device copy or batch format to
    change: the distributed iterator puts each batch on its devices. On the H200 (2026-12-04, plain
    TensorFlow, benchmarks/tf_gpu/distributed_fixes.py) the TF tutorial's MirroredStrategy loop ran
    1.79x with drop_remainder=True, 1.95x with repeat(), 2.11x with 8 steps per tf.function call
    and 2.11x the examples/s with twice the batch."""
    static = []
    if partial:
        batch = next((s for s in reversed(stages) if s.kind == "batch"), None)
        static = [_fix("static_batches", batch.label if batch else None,
                       "not measured: your loop's next() on the distributed iterator checks every batch for a partial "
                       "one (TensorFlow's get_next_as_optional path), which it does only when the dataset is finite "
                       "and its batch shapes are not static; batches of one shape, or an endless dataset, skip it "
                       "(drop_remainder=True leaves out the last few examples of each epoch)",
                       batch_size=batch.buffer_size if batch else None)]
    return static + [
        _fix("batch_size", None, f"not measured: each batch taken through the distributed iterator costs about "
             f"{through_ms:.2f} ms whatever it holds; twice the batch halves those calls per example",
             code="ds = ds.batch(2 * BATCH_SIZE)  # with the learning rate scaled to match"),
        _fix("steps_per_call", None, "not measured: the distributed iterator's get_next runs inside one compiled "
             "call for several steps, off your loop's Python thread", framework="tensorflow",
             code=("model.compile(..., steps_per_execution=8)  # Keras fit: 8 batches per compiled call\n"
                   "@tf.function  # a custom loop: several steps per call, the iterator read inside the graph\n"
                   "def train_steps(iterator, steps):\n"
                   "    for _ in tf.range(steps):\n"
                   "        strategy.run(train_step, args=(next(iterator),))")),
    ]


def _python_fixes(verdict: Verdict, stages: Sequence[Stage], slow_stage: str | None, given: list[Fix]) -> list[Fix]:
    """Stages that run Python for every element, where a measurement points at them: the
    anatomy named the stage slowest, or about one core was busy while the step waited (the GIL
    lets one thread run Python at a time) and it is the only Python stage. Not when a measured
    change to that stage helped (a parallel map or interleave: then the Python was not what
    held it back), and not when the CPUs sat idle while the step waited: Python that waits on
    I/O or sleeps lets go of the GIL, so more calls in flight help and the GIL is not the limit."""
    python = [s for s in stages if s.has_py_function]
    helped = {f.stage for f in given if f.measured_speedup}
    kind = verdict.cpu_pattern.kind if verdict.cpu_pattern is not None else None
    if kind == "idle":
        return []
    one_core = kind == "one_core"
    out = []
    for s in python:
        if s.label in helped:
            continue
        if s.label == slow_stage:
            pointer = f"the anatomy found `{s.label}` the slowest stage"
        elif one_core and len(python) == 1:
            pointer = "about one core was busy while the step waited, as when one thread at a time runs Python"
        else:
            continue
        what = "the generator" if s.kind == "from_generator" else "its function (tf.py_function)"
        basis = (
            f"not measured (pipediag cannot rewrite Python into TensorFlow ops): {pointer}; {what} runs Python for "
            "every element, and Python runs one thread at a time (the GIL), so parallel calls would queue on it. "
            "Work done for a whole batch in TensorFlow ops (or vectorized NumPy) runs once per batch, off the GIL"
        )
        batch = next((t.buffer_size for t in stages if t.kind == "batch" and t.index > s.index and t.buffer_size), None)
        out.append(_fix("vectorize_map", s.label, basis, python=True, batch_size=batch))
    return out


def _shuffle_buffer_fix(b: BufferEstimate, budget: float, budget_source: str | None) -> Fix:
    whose = {"given": "the RAM budget", "container_limit": "the container's memory limit"}.get(
        budget_source, "this host's memory")
    size = b.suggested_elements(budget)
    basis = (
        f"not measured (a smaller buffer changes how well the order is mixed, which pipediag cannot judge): "
        f"`{b.stage}` holds {catalog.size_text(b.total_bytes)} = {b.elements} elements x "
        f"{b.bytes_per_element / 2**10:.0f} KiB (buffer size from the graph, bytes per element measured), "
        f"{b.total_bytes / budget:.1f}x {whose}; shuffle({size}) would hold {catalog.size_text(size * b.bytes_per_element)}, "
        f"at most {100 * SUGGESTED_BUFFER_SHARE:.0f}% of it"
    )
    return _fix("shuffle_buffer", b.stage, basis, suggested_elements=size, bytes_per_element=b.bytes_per_element,
                elements=b.elements)


def _jax_allocator_basis(modes: dict[str, ModeSummary | None]) -> str:
    synthetic = modes.get("synthetic")
    peak = synthetic.peak_memory if synthetic else None
    total = synthetic.gpu_memory_total_bytes if synthetic else None
    if peak is not None and peak.limit_bytes and total:
        return (f"not measured: JAX may use {peak.limit_bytes / 2**30:.1f} of the GPU's {total / 2**30:.1f} GiB "
                f"({100 * peak.limit_bytes / total:.0f}%)")
    return "not measured: JAX reserves 75% of GPU memory unless told otherwise"


def _service_fix(verdict: Verdict, modes: dict[str, ModeSummary | None], changes: Sequence[Change],
                 stages: Sequence[Stage], scale_command: str | None) -> Fix | None:
    """tf.data service, when every core was busy and nothing on this host is left (fixes.service)."""
    basis = service_basis(verdict, modes, changes, stages)
    return None if basis is None else _fix("tf_data_service", None, basis, command=scale_command)
