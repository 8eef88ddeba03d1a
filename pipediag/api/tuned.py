"""`tuned()`: the user's pipeline with the changes a diagnosis measured as gains, as a Dataset.

    diagnosis ─▶ gains (patch.selection) ─▶ the user's graph now ─▶ same graph? ─▶ checks ─▶ build

The changes are applied by the very graph rewrite the tuned mode uses (`modes.tuning.build`), on
the pipeline built now, after checking that its stages are the ones the diagnosis recorded (the
saved changes point at graph nodes). The tuned mode's safety checks run again: batch-before-map is
re-checked on real data, a cache must still fit the memory available now, and the first batch of
the result is compared with the original's (equal values for a deterministic pipeline; the same
structure, shapes and types for a random one). docs/patch.md says what the result keeps.

Library code: it returns objects and prints nothing. TensorFlow is imported only when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipediag.errors import PipediagError, UsageError
from pipediag.records.change import Change
from pipediag.records.options import NAMES as RUN_OPTION_NAMES
from pipediag.records.options import RunOptions, run_options
from pipediag.results.diagnose import Diagnosis, read_json
from pipediag.tuner.selection import require_same_graph, select_gains

DEFAULT_FILL_BUDGET_S = 10.0  # the diagnosis' own time cap per mode, when its settings lack one


@dataclass
class TunedResult:
    """The tuned pipeline and how it was made."""

    dataset: Any  # a tf.data.Dataset, ready for model.fit or a JAX loop
    applied: tuple[Change, ...]  # the changes in it
    left_out: tuple[Change, ...]  # every other planned change, with its reason
    check: str  # how its first batch compared with the original's
    diagnosis: Diagnosis
    cache_fill_ms: float | None = None  # the cache is filled before tuned() returns, as the tuned mode did
    notes: list[str] = field(default_factory=list)


def tuned(builder: Callable[..., Any] | Any, diagnosis: Diagnosis | str | None = None, **kwargs: Any) -> Any:
    """The user's pipeline with the changes `diagnosis` measured as gains applied: a
    `tf.data.Dataset`. See `tuned_pipeline` for the arguments, and for what was applied."""
    return tuned_pipeline(builder, diagnosis, **kwargs).dataset


def tuned_pipeline(
    builder: Callable[..., Any] | Any,
    diagnosis: Diagnosis | str | None = None,
    *,
    options: RunOptions | None = None,
    ram_budget_bytes: int | None = None,
    gains_only: bool = True,
    **kwargs: Any,
) -> TunedResult:
    """builder: the function that builds the pipeline (or the Dataset itself), called as in the
    diagnosis (the options' `builder_kwargs`, `batched` and `batch_size`, by default the diagnosis' own).
    options: the RunOptions every entry point shares, or the same as keyword arguments.
    diagnosis: a Diagnosis, the path of a saved one (`diagnose --save FILE`), or None to run one
    now (the options, e.g. `model=`, and diagnose's own keyword arguments go to `pipediag.diagnose`).
    gains_only=False: every change the tuned mode applied, measured gain or not (its pipeline exactly).
    Raises UsageError when the pipeline is not the one the diagnosis saw, or when nothing was
    measured; PipediagError when the tuned pipeline's first batch differs from the original's."""
    opts = run_options(options, "tuned_pipeline", **{k: v for k, v in kwargs.items() if k in RUN_OPTION_NAMES})
    diagnose_kwargs = {k: v for k, v in kwargs.items() if k not in RUN_OPTION_NAMES}
    builder_kwargs, batch_size, batched, clock_ns = opts.builder_kwargs, opts.batch_size, opts.batched, opts.clock_ns
    fresh_only = [k for k in kwargs if k not in ("builder_kwargs", "batch_size", "batched", "clock_ns")]
    if isinstance(diagnosis, str):
        diagnosis = read_json(diagnosis)
    elif diagnosis is None:
        from pipediag.api.diagnose import diagnose

        diagnosis = diagnose(builder, options=opts, ram_budget_bytes=ram_budget_bytes, **diagnose_kwargs)
    elif fresh_only:
        raise UsageError(f"{', '.join(fresh_only)}: only for a fresh diagnosis (diagnosis=None)",
                         "leave them out when you pass a saved diagnosis")
    selection = select_gains(diagnosis, gains_only)
    if batch_size is None:
        batch_size = diagnosis.settings.get("batch_size")

    from pipediag.builder.dataset import take_first_batch
    from pipediag.builder.functions import user_functions
    from pipediag.builder.prepare import prepare_dataset
    from pipediag.tuner import rewrite as tuning
    from pipediag.tuner.checks import check_outputs, is_deterministic

    prepared = prepare_dataset(builder, dict(builder_kwargs or {}), batch_size, batched, 0, clock_ns=clock_ns)
    if prepared.graph is None:
        raise UsageError("the pipeline's graph cannot be read now, so the saved changes cannot be applied to it",
                         "; ".join(prepared.notes) or "see 'pipediag diagnose' for why")
    require_same_graph(diagnosis, prepared.stages)

    dataset = prepared.dataset
    fill_budget_s = float(diagnosis.settings.get("max_seconds_per_mode") or DEFAULT_FILL_BUDGET_S)
    latency_bound = any(c.kind == "threading" for c in selection.gains)
    facts = tuning.facts_for(dataset, ram_budget_bytes=ram_budget_bytes, fill_budget_seconds=fill_budget_s,
                             latency_bound=latency_bound)
    plan = tuning.TuningPlan(dataset, prepared.graph, list(prepared.stages), facts, list(selection.gains),
                             user_functions(dataset))
    checked, refused = _recheck(plan, selection.gains, facts)
    plan.changes = checked
    built = tuning.build(plan, [c.key for c in checked], clock_ns)
    applied = tuple(c for c in built.changes if c.applied)
    not_built = tuple(c for c in built.changes if not c.applied)

    deterministic, why_random = is_deterministic(
        any(s.is_random for s in prepared.stages), [prepared.first_batch], [take_first_batch(dataset).batch])
    check = check_outputs([prepared.first_batch], [take_first_batch(built.dataset).batch], deterministic, why_random,
                          approximate=any(c.details.get("approximate") for c in applied))
    if check.ok is False:
        raise PipediagError(f"the tuned pipeline was not returned: {check.text}",
                            "re-run the diagnosis; if it happens again, report it (the rewrite changed values)")
    return TunedResult(
        dataset=built.dataset, applied=applied, left_out=selection.left_out + tuple(refused) + not_built,
        check=check.text, diagnosis=diagnosis,
        cache_fill_ms=None if built.cache_fill_ns is None else built.cache_fill_ns / 1e6,
        notes=list(prepared.notes) + list(built.notes),
    )


def _recheck(plan, gains: tuple[Change, ...], facts) -> tuple[list[Change], list[Change]]:
    """The tuned mode's safety checks, again, on the pipeline as it is now: batch-before-map on
    real data (the function must give the same values on whole batches), and a cache's size
    against the memory available now (it was within the budget when diagnosed, maybe not now)."""
    from pipediag.tuner import rewrite as tuning

    kept, refused = [], []
    for change in gains:
        if change.kind == "vectorize_map" and change.details.get("form") == "csv":
            change = tuning.check_batch_csv(plan.graph, change)
        elif change.kind == "vectorize_map":
            change = tuning._check_vectorize(plan.graph, change, plan.functions)
        elif change.kind == "cache":
            size = change.details.get("estimated_bytes")
            if size is not None and size > facts.ram_budget_bytes:
                change = change.skipped(f"it would hold ~{size / 2**30:.1f} GiB, over the RAM budget now "
                                        f"({facts.ram_budget_bytes / 2**30:.1f} GiB)")
        (kept if change.applied else refused).append(change)
    return kept, refused
