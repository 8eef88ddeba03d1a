"""The host edge: is the step's wait for input the pipeline, or the hand-over of each batch?

A training loop pays, per batch, the hand-over (get_next, the conversion to the step's format,
the device copy: analysis/handover.py) whatever the pipeline does. With a tiny step that cost is
a large share of each iteration, and it shows as waiting for input, although a faster pipeline
would not remove any of it (issue 14: a 0.2 ms JAX step fed from memory, input alone 3.3x the
free step, called "input (high)"). The wait is the hand-over when both hold:
- the pipeline keeps up: alone it delivers batches clearly faster than the free step takes them
  (input_only / synthetic >= INPUT_HEADROOM, 1.3x, with the interval's lower end above 1), or it
  takes no longer a batch than the hand-over itself (at most GAP_SIGNIFICANT, 1.15x, the upper
  end of the hand-over's get_next and conversion): its own work then hides behind its prefetch;
- the mean wait per step in pipeline mode is at most HANDOVER_WAIT_MARGIN (2x) the upper end of
  the interval of an already-produced batch's get_next and conversion. That get_next is timed
  with nothing between the calls; where that reading leaves the wait unexplained although the
  pipeline keeps up, and the step runs on an accelerator (wants_beside_step; on the CPU a get_next
  slowed by the step is contention, the contention rule's), it is timed again with the step run between the calls,
  as in pipeline mode's loop, and the larger reading is the one the wait is held to. A step that
  keeps the host busy makes each get_next cost more: on an H100, a tiny Keras step on TensorFlow's
  GPU build, 0.295 ms a ready batch beside the step against 0.124 ms alone, with pipeline mode
  waiting 0.300 ms (benchmarks/tf_gpu/handover_beside_step.py); alone, that reading moved between
  0.107 and 0.242 ms from one process to the next and put the verdict on either side of the line.
A loop over a tf.distribute dataset (`pipediag run`) takes each batch through the strategy's
distributed iterator, whose get_next on the loop's thread costs more for a real pipeline than for
the cached batch the hand-over is timed on (on the H200, 2026-12-04: a pipeline that ran 3,117
batches/s through a plain iterator ran 301 through MirroredStrategy's on one GPU, 3.3 ms a batch,
and the loop waited 2.9 ms a step). There `run` reads the pipeline alone both ways: when the plain
read clearly outruns the free step (INPUT_HEADROOM, interval above 1), the pipeline keeps up, and
the time a batch took through the distributed iterator is the hand-over for this pipeline: the
margin above is taken on the larger of it and the ready batch's get_next.
Then the input rules do not apply. When that wait is >= INPUT_WAIT_HIGH (20%) of the time (the
TensorFlow profiler's "highly input-bound" line, now paid to the hand-over), the verdict is
**host** at the hand-over; below, the verdict falls through to the step's rules with the
hand-over as evidence. Rules in docs/verdict.md.

When the hand-over could not be timed (pipediag's own measurement failed: on the H200 its device
copy once took TensorFlow tensors to `jax.device_put`), nothing can tell these two apart, and a
waiting verdict must not read as sure: `without_handover` lowers it and says what is missing (to
low when the pipeline alone clearly outran the free step, the case the edge would most likely have
explained: on the H200, "input (high)" with input alone 2.2x the free step).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pipediag.analysis.handover import Handover
from pipediag.analysis.modes import ModeSummary, rate_ratio, ratio_of
from pipediag.records.verdict import Verdict, lower
from pipediag.verdict import thresholds as T

HOST_LIMIT_HANDOVER = "handover"  # facts["host_limit"]: the hand-over of each batch limits training


@dataclass(frozen=True)
class HandoverEdge:
    explains_wait: bool  # the pipeline keeps up; the step's wait is the hand-over's cost
    host: bool  # ... and that wait is >= INPUT_WAIT_HIGH of the time: a host verdict
    evidence: tuple[str, ...] = ()
    facts: dict[str, Any] = field(default_factory=dict)
    # the pipeline alone clearly outruns the free step, or is no slower than handing over a ready
    # batch (_keeps_up), whatever the wait: what wants_beside_step asks besides an unexplained wait
    pipeline_keeps_up: bool = False


def handover_facts(handover: Handover | None, synthetic: ModeSummary | None) -> dict[str, Any]:
    if handover is None:
        return {}
    facts: dict[str, Any] = {"handover_ms": handover.ms_mean}
    if synthetic is not None and synthetic.batches_per_sec:
        step_ms = 1e3 / synthetic.batches_per_sec
        facts["handover_over_free_step"] = handover.ms_mean / step_ms
        if handover.transfer_ms_mean is not None:
            facts["transfer_over_free_step"] = handover.transfer_ms_mean / step_ms
    if handover.transfer_ms_mean is not None:
        facts["transfer_ms"] = handover.transfer_ms_mean
    return facts


def handover_edge(synthetic: ModeSummary, pipeline: ModeSummary, input_only: ModeSummary | None,
                  handover: Handover | None) -> HandoverEdge | None:
    """None when there is no hand-over timing, no input-alone rate, or no wait to explain."""
    wait = pipeline.input_wait_frac or 0.0
    if handover is None or input_only is None or wait < T.INPUT_WAIT_MODERATE or not pipeline.batches_per_sec:
        return None
    headroom, outruns, as_fast, alone_ms = _keeps_up(synthetic, input_only, handover)
    fetch_high = _fetch_high(handover)
    # Or (pipediag run, a loop over a distributed dataset) the pipeline read through a plain
    # iterator keeps up, and input_only, read through the loop's distributed iterator, took longer a
    # batch: that time is the iterator's work for each batch on the loop's thread (get_next of the
    # distributed dataset), paid whatever the pipeline does: the hand-over, for this pipeline.
    through_ms = _distributed_handover_ms(handover, synthetic, alone_ms)
    bound = fetch_high if through_ms is None else max(fetch_high, through_ms)
    # The same ready batch's get_next timed with the step between the calls, where it was
    # (wants_beside_step): what get_next costs in the loop's own rhythm. Only for a step on an
    # accelerator (_beside_step_applies): a reading saved from a CPU step is not used.
    beside_high = handover.beside_step_fetch_ms_high if _beside_step_applies(handover) else None
    beside_sets_bound = beside_high is not None and beside_high > bound
    if beside_sets_bound:
        bound = beside_high
    wait_ms = wait * 1e3 / pipeline.batches_per_sec
    explains = (outruns or as_fast or through_ms is not None) and wait_ms <= T.HANDOVER_WAIT_MARGIN * bound
    facts = {**handover_facts(handover, synthetic), "pipeline_wait_ms": wait_ms}
    if beside_high is not None:
        facts["beside_step_fetch_ms"] = handover.beside_step_fetch_ms_mean
    if through_ms is not None:
        facts["distributed_handover_ms"] = through_ms
        # the distributed read, not the ready batch's get_next, set the bound: the hand-over is that iterator
        facts["handover_is_distributed_read"] = through_ms > fetch_high
        if handover.partial_batches is not None:
            facts["distributed_partial_batches"] = handover.partial_batches
    if not explains:
        return HandoverEdge(False, False, (), facts, pipeline_keeps_up=outruns or as_fast)
    if facts.get("handover_is_distributed_read"):
        evidence = (_distributed_evidence(handover, synthetic, through_ms, wait_ms),)
    else:
        copy = (f" + {handover.transfer_ms_mean:.3f} ms device copy" if handover.transfer_ms_mean is not None
                else f" ({handover.transfer_text})")
        through = f" through {handover.through}" if handover.through else ""
        beside = (f"; with the step run between the calls, the same get_next took "
                  f"{handover.beside_step_fetch_ms_mean:.3f} ms ({handover.beside_step_batches} timed)"
                  if beside_sets_bound else "")
        if outruns:
            keeps_up = f"ran {headroom.value:.2f}x the step's free rate"
        elif as_fast:
            keeps_up = f"took {alone_ms:.3f} ms a batch, no more than the hand-over itself"
        else:
            keeps_up = (f"ran {_plain_headroom(handover, synthetic).value:.2f}x the step's free rate through a plain "
                        "tf.data iterator")
        evidence = (
            f"handing over a batch that is already made{through} costs {handover.ms_mean:.3f} ms "
            f"({handover.fetch_ms_mean:.3f} ms get_next and conversion to {handover.batch_format}{copy}, "
            f"{handover.batches} timed{beside}): the step waited {wait_ms:.3f} ms per batch in pipeline mode, no "
            f"more than {T.HANDOVER_WAIT_MARGIN:g}x that, while the pipeline alone {keeps_up}"
            ": the wait is the hand-over, not the pipeline; a faster pipeline cannot remove it",
        )
    host = wait >= T.INPUT_WAIT_HIGH
    facts = {**facts, "wait_is_handover": True, **({"host_limit": HOST_LIMIT_HANDOVER} if host else {})}
    return HandoverEdge(True, host, evidence, facts, pipeline_keeps_up=outruns or as_fast)


def wants_beside_step(synthetic: ModeSummary | None, pipeline: ModeSummary | None, input_only: ModeSummary | None,
                      handover: Handover | None) -> bool:
    """Whether to time the ready batch's get_next again with the step between the calls: only
    where the edge would then decide differently. That is where the step waited for input (at
    least INPUT_WAIT_MODERATE), the pipeline alone keeps up (as handover_edge reads it), and the
    wait is beyond HANDOVER_WAIT_MARGIN of the get_next timed with nothing between the calls. A
    pipeline that falls behind beside the step (cores taken by the step) makes the step wait for
    whole batches, beyond what a ready batch costs beside it, and stays input. Only where the
    step runs on an accelerator (_beside_step_applies)."""
    if synthetic is None or pipeline is None or handover is None or not _beside_step_applies(handover):
        return False
    edge = handover_edge(synthetic, pipeline, input_only, handover)
    return edge is not None and not edge.explains_wait and edge.pipeline_keeps_up


def _beside_step_applies(handover: Handover) -> bool:
    """Whether the reading beside the step is the hand-over: where the step runs on an accelerator
    (a device copy was made: its framework works on one here) and the batch comes through a plain
    iterator. A step on the CPU shares the cores with the pipeline's threads and get_next's own
    work, so a get_next slowed by the step between the calls is CPU contention, which the
    contention rule reads; held to it, a wait that competition for the cores makes was called the
    hand-over (real/tf_text on the 2-core machine, accuracy run 26: 0.292 ms beside its Keras step
    against 0.193 alone explained a 0.553-ms wait, and the verdict fell to compute on the
    contention line, where this case is input through contention). A loop over a distributed
    dataset has its hand-over read through its iterator already."""
    return handover.transfer_ms_mean is not None and handover.through is None


def _fetch_high(handover: Handover) -> float:
    """The upper end of the ready batch's get_next and conversion, timed with nothing between the calls."""
    return handover.fetch_ms_mean_ci[1] if handover.fetch_ms_mean_ci else handover.fetch_ms_mean


def _keeps_up(synthetic: ModeSummary, input_only: ModeSummary, handover: Handover):
    """(headroom, outruns, as_fast, alone_ms): the pipeline alone over the free step (Ratio or None);
    whether it clearly outruns the free step (>= INPUT_HEADROOM, interval above 1); or whether it
    is no slower than handing over a ready batch (its own work then hides behind its prefetch, and
    what input_only timed is the hand-over itself); its ms a batch (None without a rate)."""
    headroom = rate_ratio(input_only, synthetic)
    outruns = headroom is not None and headroom.value >= T.INPUT_HEADROOM and headroom.clearly_above_one
    alone_ms = 1e3 / input_only.batches_per_sec if input_only.batches_per_sec else None
    as_fast = alone_ms is not None and alone_ms <= T.GAP_SIGNIFICANT * _fetch_high(handover)
    return headroom, outruns, as_fast, alone_ms


def _plain_headroom(handover: Handover, synthetic: ModeSummary):
    """The pipeline alone through a plain iterator over the free step's rate (Ratio), or None."""
    return ratio_of(handover.plain_batches_per_sec, handover.plain_batches_per_sec_ci,
                    synthetic.batches_per_sec, synthetic.batches_per_sec_ci)


def _distributed_handover_ms(handover: Handover, synthetic: ModeSummary, alone_ms: float | None) -> float | None:
    """Milliseconds a batch of the pipeline took through the loop's distributed iterator (input_only
    read through it), when the same pipeline through a plain iterator clearly outran the free step
    (>= INPUT_HEADROOM, its interval above 1) and the distributed read was the slower: then that
    time is the iterator's, not the pipeline's. None otherwise (no distributed read, or the
    pipeline itself does not keep up)."""
    if handover.through is None or alone_ms is None:
        return None
    plain = _plain_headroom(handover, synthetic)
    if plain is None or plain.value < T.INPUT_HEADROOM or not plain.clearly_above_one:
        return None
    plain_ms = 1e3 / handover.plain_batches_per_sec
    return alone_ms if alone_ms > plain_ms else None


def _distributed_evidence(handover: Handover, synthetic: ModeSummary, through_ms: float, wait_ms: float) -> str:
    plain = _plain_headroom(handover, synthetic)
    return (
        f"the pipeline alone ran {handover.plain_batches_per_sec:.0f} batches/s through a plain tf.data iterator "
        f"({plain.value:.2f}x the step's free rate) and {1e3 / through_ms:.0f} through {handover.through}: each batch "
        f"taken through {handover.through} costs {through_ms:.3f} ms of work on your loop's thread, whatever the "
        f"pipeline does; the step waited {wait_ms:.3f} ms per batch in pipeline mode, no more than "
        f"{T.HANDOVER_WAIT_MARGIN:g}x that: the wait is the hand-over through the distributed iterator, not the "
        "pipeline; a faster pipeline cannot remove it"
    )


def host_edge_verdict(edge: HandoverEdge, synthetic: ModeSummary, handover: Handover, noisy: bool) -> tuple[str, str]:
    """The host verdict's confidence and headline. High when the GPU was also mostly idle with
    free input (the step's own per-step overhead agrees); medium otherwise (no GPU readings: the
    hand-over is measured, but what the device does meanwhile is not); one level lower when noisy."""
    gpu_idle = synthetic.gpu_util_pct is not None and synthetic.gpu_util_pct < T.GPU_BUSY_FOR_COMPUTE_PCT
    confidence = "high" if gpu_idle else "medium"
    if noisy:
        confidence = lower(confidence)
    if edge.facts.get("handover_is_distributed_read"):
        through_ms = edge.facts["distributed_handover_ms"]
        step_ms = 1e3 / synthetic.batches_per_sec if synthetic.batches_per_sec else None
        size = f", {through_ms / step_ms:.2f}x the free step" if step_ms else ""
        return confidence, (f"host-bound at the hand-over: taking each batch through {handover.through} costs "
                            f"{through_ms:.3f} ms{size}; the pipeline keeps up")
    share = edge.facts.get("handover_over_free_step")
    size = f", {share:.2f}x the free step" if share is not None else ""
    return confidence, (f"host-bound at the hand-over: giving each batch to the step costs {handover.ms_mean:.3f} ms"
                        f"{size}; the pipeline keeps up")


def without_handover(verdict: Verdict, handover_missing: str, headroom: float | None, outruns: bool) -> Verdict:
    """A waiting (input) verdict reached without the hand-over timing, which failed for
    `handover_missing`: confidence lowered (to low when the pipeline alone `outruns` the free step
    by INPUT_HEADROOM, its interval above 1), with a line saying what is missing."""
    alone = f"the pipeline alone ran {headroom:.2f}x the free step" if headroom is not None else "input alone was not timed"
    text = (f"the hand-over of a ready batch could not be timed ({handover_missing}): whether this wait is the "
            f"pipeline or the cost of handing each batch to the step cannot be told, and {alone}"
            + (", so it may well be the hand-over (host-bound)" if outruns else "")
            + "; confidence lowered. Run again with --batch-format numpy to time it")
    confidence = "low" if outruns else lower(verdict.confidence)
    return replace(verdict, confidence=confidence, evidence=verdict.evidence + (text,),
                   facts={**verdict.facts, "handover_missing": handover_missing})
