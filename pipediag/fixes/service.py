"""When moving preprocessing off the host (tf.data service) is the advice, and what backs it.

Only when every core was busy while the step waited: then no change on this host can feed the step,
only more cores can. Either the tuned mode ran and the cores stayed full with the step still
waiting, or it had nothing left to rewrite (issue 25: `repeat()` before a decode, all 16 cores
busy on the H200, and "No fix recommended"). The fix stays unmeasured (a service on this same
saturated host could show its overhead, never its gain), but says how many workers it would take
(analysis.scale's arithmetic, a worker counted as this host's own pipeline: its input-alone rate
on its cores) and hands over the `pipediag scale` command that measures it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipediag.analysis.modes import ModeSummary, input_side_cpu
from pipediag.analysis.scale import CountRate, RateEstimate, plan_capacity
from pipediag.fixes.cpu import busy_text
from pipediag.records.change import Change
from pipediag.records.stage import Stage
from pipediag.records.verdict import Verdict
from pipediag.verdict.rules import classify_cpu
from pipediag.verdict.thresholds import INPUT_WAIT_HIGH


def workers_text(modes: dict[str, ModeSummary | None]) -> str | None:
    """How many workers like this host would feed the step at its free rate; None without the
    free step's rate, the input-alone rate or the host's cores."""
    synthetic, alone = modes.get("synthetic"), modes.get("input_only")
    compute, local = RateEstimate.of(synthetic), RateEstimate.of(alone)
    cores = alone.cores if alone is not None else None
    if compute is None or local is None or not cores:
        return None
    host = max(1, round(cores))
    plan = plan_capacity(compute=compute, compute_source="synthetic mode", local=local, counts=[CountRate(1, local)],
                         transfer=None, accelerators=[1], worker_cores=host, host_cores=host)
    one = plan.accelerators[0]
    if one.local_keeps_up or one.workers is None:
        return None
    lower = (f", {one.workers_conservative} at the lower end of its rate's 95% interval"
             if one.workers_conservative not in (None, one.workers) else "")
    return (f"this host's pipeline alone gives {local.batches_per_sec:.1f} batches/s on its {host} cores against the "
            f"step's {compute.batches_per_sec:.1f} with free input ({compute.batches_per_sec / local.batches_per_sec:.1f}x): "
            f"about {one.workers} tf.data service workers like this host ({one.cores} cores){lower}, if each "
            "delivers what this host does and they scale linearly")


def _nothing_left(changes: Sequence[Change]) -> bool:
    """The tuned mode had no change to make or measure on the input side (threading and prefetch aside:
    neither adds cores)."""
    return not any(c.applied for c in changes if c.kind not in ("threading", "prefetch"))


def service_basis(verdict: Verdict, modes: dict[str, ModeSummary | None], changes: Sequence[Change],
                  stages: Sequence[Stage]) -> str | None:
    """The basis of the tf.data service fix, or None when it is not the advice."""
    if verdict.cpu_pattern is None or verdict.cpu_pattern.kind != "saturated":
        return None
    tuned = modes.get("tuned")
    numbers = workers_text(modes)
    if tuned is not None and tuned.measured:
        tuned_wait = tuned.input_wait_frac or 0.0
        tuned_side = input_side_cpu(tuned, None)
        if tuned_wait < INPUT_WAIT_HIGH or tuned_side is None or classify_cpu(tuned_side).kind != "saturated":
            return None
        basis = (f"not measured: every core was busy while the step waited, and after tuning the step still waited "
                 f"{100 * tuned_wait:.0f}% of the time with the cores still full ({busy_text(tuned_side.cpu)})")
    elif _nothing_left(changes) and (verdict.facts.get("input_wait_frac") or 0.0) >= INPUT_WAIT_HIGH:
        basis = ("not measured: every core was busy while the step waited, and pipediag found nothing left to rewrite "
                 "in the pipeline: only more cores can feed the step")
    else:
        return None
    if numbers is not None:
        basis += f"; {numbers}"
    basis += "; `pipediag scale` measures the service and how many workers it takes"
    python = [s.label for s in stages if s.has_py_function]
    if python:
        basis += (f"; first rewrite {', '.join(f'`{p}`' for p in python)} with TensorFlow ops: it calls Python, "
                  "which service workers cannot run")
    return basis
