"""The tuned mode as an ablation: each planned change alone, then all that held up together.

Every variant is the user's graph with some of the planned changes (`tuning.build`), feeding the
real step like pipeline mode (see `analysis.ablation` for why fed-step). A control run (the graph
rebuilt without changes) comes first, in a short window; with two or more changes, each change
alone and the control again follow it, in the same short window; a change that is clearly
slower alone than the control, or whose first batches differ from the original's where they
must not, is left out. The rest run together as the tuned mode, with the full window. With one
change the tuned run is that change alone, right after its control, so the two differ by the
change and nothing else (not the rebuild, not minutes of drift). `--thorough`
gives the alone runs the full window too, and adds all-but-one runs when there are three or more
changes. Each variant's pipeline (and its in-memory cache) is released before the next one is
built. The tuned run, and each change alone, may stop early once its speedup over the controls
run so far is clear of the gain lines (verdict.sequential.TunedDecided; not under --thorough);
so may the control again, once every change alone is clear of them against both controls
(verdict.sequential.ControlAgainDecided). When the short controls leave a gain
undecided (analysis.ablation.needs_full_control), the control runs once more after the tuned run,
with its full window (stopping once it has decided what the short ones left open:
verdict.sequential.FullControlDecided), and is the baseline from then on: a control measures as
long as the comparison needs, not the full window every time. Where a run fed the step faster than
synthetic mode had (free input, the compute ceiling), the step is timed on synthetic data once more,
in the short window, after the other runs: a free-input reading from the same minutes, for the drift
check (fixes.measured.gain_doubt).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pipediag.analysis import ablation as pure
from pipediag.analysis.modes import ModeSummary
from pipediag.records.change import Change
from pipediag.records.run import ModeRun, StopRule
from pipediag.tuner.checks import OutputCheck, check_outputs
from pipediag.tuner.rewrite import TunedPipeline, TuningPlan, build

ALONE_MAX_SECONDS = 3.0
ALONE_MIN_SECONDS = 1.0

# run(name, dataset, rule[, decided=...]) -> (the mode's raw timings, its first batches)
RunVariant = Callable[..., tuple[ModeRun, list]]
# (the reference rate, its interval) -> the tuned run's `decided` condition, or None (verdict.sequential.TunedDecided)
TunedDecidedFor = Callable[[float, "tuple[float, float] | None"], Any]
# the runs a full-window control must decide -> its `decided` condition, or None (verdict.sequential.FullControlDecided)
ControlDecidedFor = Callable[[list[pure.VariantResult]], Any]
# (the first control, the changes' alone runs) -> the control again's `decided` condition, or None
# (verdict.sequential.ControlAgainDecided)
AgainDecidedFor = Callable[[pure.VariantResult, list[pure.VariantResult]], Any]
# run_free_input(rule) -> the step's raw timings on synthetic data (free input) again
RunFreeInput = Callable[[StopRule], ModeRun]


def alone_rule(rule: StopRule, thorough: bool) -> StopRule:
    """Short windows for the alone runs and the short controls (the tuned mode keeps the full
    one). Only their rate is read (analysis.ablation divides rates and their intervals), so each
    may stop once that rate is pinned, whatever its median step's interval (StopRule.rate_only)."""
    if thorough:
        return rule
    return replace(
        rule,
        max_seconds=min(rule.max_seconds, ALONE_MAX_SECONDS),
        min_seconds=min(rule.min_seconds, ALONE_MIN_SECONDS),
        min_steps=min(rule.min_steps, 10),
        warmup_steps=min(rule.warmup_steps, 3),
        rate_only=True,
    )


@dataclass
class Reference:
    """The original pipeline's first batches, and whether its values can be compared."""

    batches: list
    deterministic: bool
    why_random: str | None = None

    def check(self, batches: list, approximate: bool = False) -> OutputCheck:
        return check_outputs(self.batches, batches, self.deterministic, self.why_random, approximate)


@dataclass
class TuningOutcome:
    changes: list[Change]  # every planned change; applied = part of the tuned pipeline
    variants: list[pure.VariantResult] = field(default_factory=list)  # alone and all-but runs, then together
    tuned_run: ModeRun | None = None
    tuned_check: OutputCheck | None = None
    cache_fill_ns: int | None = None
    notes: list[str] = field(default_factory=list)
    window_s: float = 0.0


def _variant(name: str, role: str, keys: tuple[str, ...], run: ModeRun | None, summary: ModeSummary | None,
             check: OutputCheck | None, fill_ns: int | None, error: str | None = None,
             full_window: bool = False) -> pure.VariantResult:
    return pure.VariantResult(
        name=name, role=role, changes=keys,
        batches_per_sec=None if summary is None else summary.batches_per_sec,
        batches_per_sec_ci=None if summary is None else summary.batches_per_sec_ci,
        steps=0 if run is None else run.steps,
        stop_reason=None if run is None else run.stop_reason,
        input_wait_frac=None if summary is None else summary.input_wait_frac,
        check=None if check is None else check.text,
        check_ok=None if check is None else check.ok,
        cache_fill_ms=None if fill_ns is None else fill_ns / 1e6,
        error=error,
        full_window=full_window,
    )


def _short(change: Change) -> str:
    return f"{change.kind} {change.stage}" if change.stage else change.kind


def tune_with_ablation(
    plan: TuningPlan,
    *,
    baseline: ModeSummary,
    reference: Reference,
    run_variant: RunVariant,
    summarize: Callable[[ModeRun], ModeSummary],
    rule: StopRule,
    thorough: bool = False,
    outcome: TuningOutcome | None = None,
    clock_ns: Callable[[], int] = time.monotonic_ns,
    guard: Callable[..., Any] | None = None,
    tuned_decided: TunedDecidedFor | None = None,
    control_decided: ControlDecidedFor | None = None,
    again_decided: AgainDecidedFor | None = None,
    free_input_ci: tuple[float, float] | None = None,
    run_free_input: RunFreeInput | None = None,
) -> TuningOutcome:
    """Run the ablation and the tuned mode. `outcome`, when given, is filled in as runs finish,
    so a Ctrl-C leaves what was measured. `guard` (`Watchdog.call`): a cache fill runs under its
    deadline (see `cache_fill.fill_cache`). `tuned_decided`: given the rate a run is judged
    against (the control runs', else pipeline mode's) and its interval, the condition that may end
    the tuned run, or a change alone, early (once its speedup is clear of the gain lines).
    `control_decided`: given the runs the short controls left undecided, the condition that may
    end the full-window control early (once it has decided them). `again_decided`: given the first
    control and the changes' alone runs, the condition that may end the control run again after
    them early (once each is clear of the gain lines against both controls). `free_input_ci`: synthetic
    mode's rate interval; where a run fed the step faster than that (analysis.ablation.
    runs_above_free), `run_free_input` times the step on synthetic data again, in the short window,
    after every other run, so the drift check (fixes.measured.gain_doubt) has a free-input reading
    from the same minutes as the run it judges."""
    out = outcome if outcome is not None else TuningOutcome(changes=list(plan.changes))
    out.changes = list(plan.changes)
    out.notes.extend(plan.notes)
    short = alone_rule(rule, thorough)
    by_key = {c.key: c for c in plan.candidates}
    keys = list(by_key)
    excluded: dict[str, str] = {}

    def one(role: str, keys_: tuple[str, ...], name: str, run_name: str, run_rule: StopRule, decided=None,
            full_window: bool = False):
        """Build and run one variant; (run, check, cache fill ns, its changes) or None."""
        tuned: TunedPipeline | None = build(plan, keys_, clock_ns, guard=guard)
        skipped = {c.key: c.reason or "could not be applied" for c in tuned.changes if c.key in keys_ and not c.applied}
        for key, reason in skipped.items():
            excluded.setdefault(key, reason)
        if keys_ and set(skipped) == set(keys_):
            out.variants.append(_variant(name, role, keys_, None, None, None, tuned.cache_fill_ns,
                                         error="; ".join(skipped.values())))
            return None
        applied = tuple(k for k in keys_ if k not in skipped)
        run, firsts = run_variant(run_name, tuned.dataset, run_rule, **({"decided": decided} if decided else {}))
        check = reference.check(firsts, any(by_key[k].details.get("approximate") for k in applied if k in by_key))
        fill_ns, changes = tuned.cache_fill_ns, tuned.changes
        out.variants.append(_variant(name, role, applied, run, summarize(run), check, fill_ns, full_window=full_window))
        del tuned  # release the variant's pipeline (and its cache) before the next one is built
        gc.collect()
        return run, check, fill_ns, changes

    # Every control is short, also before a single change: its tuned run usually stops early once
    # its speedup is clear (about 0.8 s), and a full control (at least 2 s) was then most of the
    # tuning's time. A control too short to show a gain is measured again with the full window (below).
    out.window_s = short.max_seconds
    for keys_ in pure.plan_alone(keys):
        if not keys_:
            again = any(v.role == "control" for v in out.variants)
            name = "control again" if again else "control"
            # The control again knows what it must decide (the alone runs before it) and may stop
            # once it has; the first control does not.
            one("control", keys_, f"{name}: rebuilt, unchanged", name, short,
                _again_decided(again_decided, out) if again else None)
            continue
        change = by_key[keys_[0]]
        # Like the tuned run, a change alone may stop once its speedup over the control is clear
        # of the gain lines (a run on a line measures its whole short window).
        one("alone", keys_, f"{_short(change)} alone", f"{_short(change)} alone", short,
            _tuned_decided(tuned_decided, out, baseline))

    candidates = [(c.key, c.kind, c.stage) for c in plan.candidates]
    interim = pure.conclude(baseline.batches_per_sec, baseline.batches_per_sec_ci, candidates, out.variants, short.max_seconds)
    excluded.update(pure.left_out(interim))
    together = tuple(k for k in keys if k not in excluded)

    result = one("together", together, "together", "tuned", rule, _tuned_decided(tuned_decided, out, baseline))
    if result is not None:
        run, check, fill_ns, built = result
        out.tuned_run, out.tuned_check, out.cache_fill_ns = run, check, fill_ns
        if check.ok is False:
            out.notes.append(f"the tuned pipeline's output check failed: {check.text}")
        out.changes = [excluded_change(c, excluded) for c in built]
    else:
        out.changes = [excluded_change(c, excluded) for c in plan.changes]

    # A baseline too uncertain to show a gain the runs suggest: the control again, full window.
    if result is not None and short.max_seconds < rule.max_seconds:
        so_far = pure.conclude(baseline.batches_per_sec, baseline.batches_per_sec_ci, candidates, out.variants,
                               short.max_seconds)
        why = pure.needs_full_control(so_far)
        if why is not None:
            decided = None if control_decided is None else control_decided(pure.undecided_runs(so_far))
            if one("control", (), "control, full window: rebuilt, unchanged", "control full", rule, decided,
                   full_window=True) is not None:
                until = "" if decided is None else ", until it had decided them"
                out.notes.append(f"{why}: the control ran again with the tuned run's window "
                                 f"({rule.max_seconds:g} s{until}), right after it, and every change is judged "
                                 "against that run")

    for keys_ in pure.plan_all_but(list(together), thorough):
        missing = next(k for k in together if k not in keys_)
        one("all_but", keys_, f"all but {_short(by_key[missing])}", f"all but {_short(by_key[missing])}", short)

    above = pure.runs_above_free(out.variants, free_input_ci)
    if above and run_free_input is not None:
        run = run_free_input(short)
        summary = summarize(run)
        out.variants.append(_variant("free input again: the step on synthetic data", "free_input", (), run, summary,
                                     None, None))
        names = ", ".join(v.name for v in above)
        again = "" if summary.batches_per_sec is None else f" ({summary.batches_per_sec:.1f} batches/s)"
        out.notes.append(
            f"{names} fed the step faster than free input had ({free_input_ci[0]:.1f}-{free_input_ci[1]:.1f} "
            f"batches/s, synthetic mode): the step was timed on synthetic data again after the tuned runs{again}, "
            "and a speedup is taken for drift only where its run beat both free-input readings")
    return out


def _tuned_decided(make: TunedDecidedFor | None, out: TuningOutcome, baseline: ModeSummary):
    """The tuned run's `decided` condition, against what its speedup will be taken over (as
    analysis.ablation.conclude): the control runs so far, else pipeline mode."""
    if make is None:
        return None
    rate, ci = pure.control_baseline(out.variants)
    if rate is None:
        rate, ci = baseline.batches_per_sec, baseline.batches_per_sec_ci
    return None if rate is None else make(rate, ci)


def _again_decided(make: AgainDecidedFor | None, out: TuningOutcome):
    """The control again's `decided` condition, for the alone runs whose effect the controls'
    rate decides: not one that failed to run or whose output check failed (unmeasured or unsafe,
    whatever the controls read). None where there is no first control with a rate, or no such run."""
    if make is None:
        return None
    first = next((v for v in out.variants if v.role == "control"), None)
    if first is None or first.error is not None or not first.batches_per_sec:
        return None
    alone = [v for v in out.variants if v.role == "alone" and v.error is None and v.check_ok is not False]
    return make(first, alone) if alone else None


def excluded_change(change: Change, excluded: dict[str, str]) -> Change:
    if change.key in excluded:
        return change.skipped(excluded[change.key])
    return change
