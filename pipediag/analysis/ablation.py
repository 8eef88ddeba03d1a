"""The ablation's bookkeeping: what each change of the tuned mode gives on its own.

The TensorFlow side runs the user's pipeline with each planned change alone, and with all the
changes that held up together (the tuned mode), each feeding the real step like pipeline mode.
All runs are compared with a *control*: the user's graph rebuilt without any change, run right
before the alone runs and again right after them, with the same short window. Throughput on a
shared machine drifts by 10-15% between windows seconds apart, more than one window's own
interval shows, so the baseline is measured next to what it is compared with, and its interval
spans both control runs: drift during the ablation widens every interval instead of passing for
an effect. Where those short windows leave a gain undecided, the control runs again with the full
window and is the baseline alone (`needs_full_control`). A single change has no alone runs (the
tuned run is that change alone), and still gets its control, run right before the tuned run: the rebuild alone changes a pipeline's speed (a
graph rebuilt with `DatasetFromGraph` ran 1.05-1.17x the same pipeline built in Python under
autotune; docs/patch.md), so pipeline mode is no baseline for a rebuilt variant. Pipeline mode is
the baseline only where no control ran (an older saved diagnosis, an interrupted one).
Per change this module says: `gain` (faster, the 95% intervals apart, by at least `MIN_GAIN`),
`none`, `harm` (clearly slower), `unsafe` (its first batches differ from the original's), or
`unmeasured` (it could not be built or run). Harmful and unsafe changes are left out of the
together run. Pure: plain numbers in and out.

Why fed-step and not input-only: the question a fix answers is "how much faster will training
be". A change that triples the pipeline alone gives nothing when the step is the limit, and on
a CPU host parallel preprocessing takes cores from the step itself; only a run that feeds the
step shows either. The input-only waterfall (anatomy) says where the pipeline is slow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipediag.analysis.modes import Ratio, ratio_of

MIN_GAIN = 1.05  # a gain below 5% is not worth a change, even when significant
EFFECTS = ("gain", "none", "harm", "unsafe", "unmeasured")


@dataclass(frozen=True)
class VariantResult:
    """One run of a rewritten pipeline feeding the step."""

    name: str  # "parallel_map alone", "together", "all but parallel_map", "control", "free input again"
    # control | alone | together | all_but | free_input (the step on synthetic data again, after the
    # tuned runs, where one of them fed it faster than synthetic mode had: runs_above_free)
    role: str
    changes: tuple[str, ...]  # the Change keys it applied
    batches_per_sec: float | None
    batches_per_sec_ci: tuple[float, float] | None
    steps: int
    stop_reason: str | None
    input_wait_frac: float | None = None
    check: str | None = None  # how its first batches compared with the original's
    check_ok: bool | None = None  # False: they differ where they must not
    cache_fill_ms: float | None = None
    error: str | None = None  # why it could not be built or run
    full_window: bool = False  # a control run again with the tuned run's full window (needs_full_control)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VariantResult:
        ci = d.get("batches_per_sec_ci")
        return cls(**{**d, "changes": tuple(d.get("changes", ())), "batches_per_sec_ci": None if ci is None else tuple(ci)})


@dataclass(frozen=True)
class ChangeEffect:
    change: str  # Change.key
    kind: str
    stage: str | None
    effect: str  # one of EFFECTS
    speedup: float | None  # its own: variant / pipeline mode
    speedup_ci: tuple[float, float] | None
    basis: str  # "alone" | "only change" (the together run was this change alone) | "none"
    reason: str | None = None  # for unsafe / unmeasured
    without_speedup: float | None = None  # together's speedup / the speedup of the run without it
    without_ci: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChangeEffect:
        fix = {k: (None if d.get(k) is None else tuple(d[k])) for k in ("speedup_ci", "without_ci")}
        return cls(**{**d, **fix})


@dataclass(frozen=True)
class Ablation:
    measure: str  # "fed_step": every variant feeds the real step
    baseline_batches_per_sec: float | None  # the alone runs' baseline: the control run, else pipeline mode
    baseline_ci: tuple[float, float] | None
    variants: tuple[VariantResult, ...]
    effects: tuple[ChangeEffect, ...]
    together_speedup: float | None
    together_ci: tuple[float, float] | None
    window_s: float  # the time cap of each variant's run

    @property
    def baseline_run(self) -> str:
        return "control" if any(v.role == "control" for v in self.variants) else "pipeline"

    def effect(self, key: str) -> ChangeEffect | None:
        return next((e for e in self.effects if e.change == key), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "baseline": {"run": self.baseline_run, "batches_per_sec": self.baseline_batches_per_sec,
                         "batches_per_sec_ci": self.baseline_ci},
            "window_s": self.window_s,
            "together": {"speedup": self.together_speedup, "speedup_ci": self.together_ci},
            "effects": [e.to_dict() for e in self.effects],
            "variants": [v.to_dict() for v in self.variants],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ablation:
        base = d.get("baseline") or {}
        together = d.get("together") or {}

        def tup(v):
            return None if v is None else tuple(v)

        return cls(
            measure=d.get("measure", "fed_step"),
            baseline_batches_per_sec=base.get("batches_per_sec"),
            baseline_ci=tup(base.get("batches_per_sec_ci")),
            variants=tuple(VariantResult.from_dict(v) for v in d.get("variants", [])),
            effects=tuple(ChangeEffect.from_dict(e) for e in d.get("effects", [])),
            together_speedup=together.get("speedup"),
            together_ci=tup(together.get("speedup_ci")),
            window_s=d.get("window_s", 0.0),
        )


def control_baseline(variants: list[VariantResult]) -> tuple[float | None, tuple[float, float] | None]:
    """The control runs' mean rate, with an interval spanning all of theirs (drift included).
    Where a control ran again with the full window (needs_full_control), that one alone."""
    controls = [v for v in variants if v.role == "control" and v.error is None and v.batches_per_sec]
    if any(v.full_window for v in controls):
        controls = [v for v in controls if v.full_window]
    return pooled([(v.batches_per_sec, v.batches_per_sec_ci) for v in controls])


def pooled(readings: Sequence[tuple[float, tuple[float, float] | None]]) -> tuple[float | None, tuple[float, float] | None]:
    """Control runs taken as one baseline, from their (rate, 95% interval) each: the mean rate, with
    an interval spanning all of theirs (None where one has none); (None, None) for no run."""
    if not readings:
        return None, None
    rate = sum(r for r, _ in readings) / len(readings)
    cis = [ci for _, ci in readings]
    if any(ci is None for ci in cis):
        return rate, None
    return rate, (min(ci[0] for ci in cis), max(ci[1] for ci in cis))


def classify(ratio: Ratio | None) -> str:
    if ratio is None:
        return "unmeasured"
    if ratio.clearly_above_one and ratio.value >= MIN_GAIN:
        return "gain"
    if ratio.clearly_below_one and ratio.value <= 1 / MIN_GAIN:
        return "harm"
    return "none"


def _divide(a: Ratio | None, b: Ratio | None) -> Ratio | None:
    if a is None or b is None or not b.value:
        return None
    low = high = None
    if None not in (a.low, a.high, b.low, b.high) and b.low > 0:
        low, high = a.low / b.high, a.high / b.low
    return Ratio(a.value / b.value, low, high)


def _ci(ratio: Ratio | None) -> tuple[float, float] | None:
    if ratio is None or ratio.low is None or ratio.high is None:
        return None
    return ratio.low, ratio.high


def conclude(
    pipeline_batches_per_sec: float | None,
    pipeline_ci: tuple[float, float] | None,
    candidates: list[tuple[str, str, str | None]],  # (key, kind, stage) of each planned change
    variants: list[VariantResult],
    window_s: float,
) -> Ablation:
    """Each candidate's own effect, from its alone run (or, as the only change, the together
    run), plus the together speedup and, where run, how much the others lose without it; all
    against the control run, or pipeline mode when there is none."""
    baseline_batches_per_sec, baseline_ci = control_baseline(variants)
    if baseline_batches_per_sec is None:
        baseline_batches_per_sec, baseline_ci = pipeline_batches_per_sec, pipeline_ci

    def vs_baseline(v: VariantResult | None) -> Ratio | None:
        if v is None or v.error is not None:
            return None
        return ratio_of(v.batches_per_sec, v.batches_per_sec_ci, baseline_batches_per_sec, baseline_ci)

    together = next((v for v in variants if v.role == "together"), None)
    effects = []
    for key, kind, stage in candidates:
        own = own_run(variants, key)
        basis = "only change" if own is not None and own.role == "together" else "alone"
        ratio = vs_baseline(own)
        reason = None
        if own is None:
            effect, basis, reason = "unmeasured", "none", "no run applied this change alone"
        elif own.error is not None:
            effect, basis, reason = "unmeasured", "none", own.error
        elif own.check_ok is False:
            effect, reason = "unsafe", own.check
        else:
            effect = classify(ratio)
        without = None
        rest = set(together.changes) - {key} if together is not None and key in together.changes else None
        all_but = None if not rest else next(
            (v for v in variants if v.role in ("alone", "all_but") and set(v.changes) == rest), None)
        if all_but is not None and all_but.error is None:
            without = _divide(vs_baseline(together), vs_baseline(all_but))
        effects.append(ChangeEffect(
            change=key, kind=kind, stage=stage, effect=effect,
            speedup=None if ratio is None else ratio.value, speedup_ci=_ci(ratio), basis=basis, reason=reason,
            without_speedup=None if without is None else without.value, without_ci=_ci(without),
        ))
    whole = vs_baseline(together)
    return Ablation(
        measure="fed_step",
        baseline_batches_per_sec=baseline_batches_per_sec,
        baseline_ci=baseline_ci,
        variants=tuple(variants),
        effects=tuple(effects),
        together_speedup=None if whole is None else whole.value,
        together_ci=_ci(whole),
        window_s=window_s,
    )


def own_run(variants: list[VariantResult] | tuple[VariantResult, ...], key: str) -> VariantResult | None:
    """The run that measured change `key` by itself: its alone run, else the together run where
    that applied this change alone (a single change has no alone run); None if neither ran."""
    alone = next((v for v in variants if v.role == "alone" and v.changes == (key,)), None)
    if alone is not None:
        return alone
    return next((v for v in variants if v.role == "together" and v.changes == (key,)), None)


def needs_full_control(ablation: Ablation) -> str | None:
    """Why the control should run again with the tuned run's full window, or None.

    The short control windows (two or more changes) can leave the baseline's interval so wide
    that a real gain cannot show: a fed step that waits in bursts varies a lot from step to step,
    and 30 steps of it gave 7.3-15.7 batches/s around 10.0 on the TF load-images tutorial
    (2-core machine, 2026-12-04), where its cache alone ran 14.8 (13.5-16.4) and plain TensorFlow
    put the cached pipeline 1.41x over the original, ranges apart. So when a change alone, or all
    of them together, ran at least MIN_GAIN faster than the control but the interval still reaches
    1, and the control's own interval is the wider of the two, the control is measured again, as
    long as the tuned run: where the interval comes from the change's own run, a longer control
    would not decide it."""
    undecided = _undecided(ablation)
    if not undecided:
        return None
    name, speedup, _ = undecided[0]
    low, high = ablation.baseline_ci
    return (f"{name} ran {speedup:.2f}x the control, but the control's short windows left its interval "
            f"{low:.1f}-{high:.1f} batches/s, too wide to tell")


def undecided_runs(ablation: Ablation) -> list[VariantResult]:
    """The runs `needs_full_control` found undecided for want of a narrower control: what the
    control run again must decide (verdict.sequential.FullControlDecided)."""
    return [run for _, _, run in _undecided(ablation)]


def _undecided(ablation: Ablation) -> list[tuple[str, float, VariantResult]]:
    """(name, speedup, its run) of each gain the controls' interval, wider than the run's own, leaves open."""
    if ablation.baseline_run != "control" or ablation.baseline_ci is None:
        return []
    base_low, base_high = ablation.baseline_ci
    base_width = (base_high - base_low) / ablation.baseline_batches_per_sec
    undecided = []
    for e in ablation.effects:
        if e.effect == "none" and e.speedup is not None and e.speedup >= MIN_GAIN and e.speedup_ci is not None:
            undecided.append((e.kind, e.speedup, e.change))
    if ablation.together_speedup is not None and ablation.together_speedup >= MIN_GAIN and ablation.together_ci \
            and ablation.together_ci[0] <= 1.0:
        undecided.append(("together", ablation.together_speedup, None))
    found = []
    for name, speedup, key in undecided:
        run = next((v for v in ablation.variants if v.error is None and v.batches_per_sec_ci and (
            v.role == "together" if key is None else (v.role == "alone" and v.changes == (key,)))), None)
        if run is None:
            continue
        width = (run.batches_per_sec_ci[1] - run.batches_per_sec_ci[0]) / run.batches_per_sec
        if base_width > width:
            found.append((name, speedup, run))
    return found


@dataclass(frozen=True)
class Unsettled:
    """A change measured as no gain against the controls together, but as a gain against one of
    them, where the controls themselves ran apart (their 95% intervals do not overlap): which
    control to believe decides the answer, so the measurement does not settle it."""

    change: str  # Change.key
    speedups: tuple[float, ...]  # its run against each control run, in run order
    control_rates: tuple[float, ...]  # each control run's batches per second, in run order


def unsettled(ablation: Ablation) -> list[Unsettled]:
    """The changes `Unsettled` describes. Only effects of "none" (a harm, clearly slower, and an
    unsafe or unmeasured change are what they are), and only with two or more control runs."""
    controls = [v for v in ablation.variants
                if v.role == "control" and v.error is None and v.batches_per_sec and v.batches_per_sec_ci]
    if len(controls) < 2 or max(c.batches_per_sec_ci[0] for c in controls) <= min(c.batches_per_sec_ci[1] for c in controls):
        return []
    found = []
    for e in ablation.effects:
        if e.effect != "none":
            continue
        own = own_run(ablation.variants, e.change)
        if own is None or own.error is not None or not own.batches_per_sec_ci:
            continue
        against = [ratio_of(own.batches_per_sec, own.batches_per_sec_ci, c.batches_per_sec, c.batches_per_sec_ci)
                   for c in controls]
        if any(classify(r) == "gain" for r in against):
            found.append(Unsettled(e.change, tuple(r.value for r in against), tuple(c.batches_per_sec for c in controls)))
    return found


CHANGED_ROLES = ("alone", "together", "all_but")  # the runs that apply a change


def runs_above_free(variants: list[VariantResult], free_ci: tuple[float, float] | None) -> list[VariantResult]:
    """The runs of a changed pipeline that fed the step faster than free input did: their rate's
    95% interval wholly above `free_ci` (synthetic mode's). No input change can make the step run
    faster than an already-made batch does, so either the step itself sped up since synthetic
    mode ran (drift, warm-up, another process stopping) or synthetic mode's reading was low for
    its moment: free input is then measured again, after these runs (tuner.ablation), and
    fixes.measured.gain_doubt holds each run to every free-input reading."""
    if free_ci is None:
        return []
    return [v for v in variants if v.role in CHANGED_ROLES and v.error is None and v.batches_per_sec_ci
            and v.batches_per_sec_ci[0] > free_ci[1]]


def free_input_runs(ablation: Ablation | None) -> list[VariantResult]:
    """The step run on synthetic data again during the ablation (runs_above_free), with a rate."""
    if ablation is None:
        return []
    return [v for v in ablation.variants if v.role == "free_input" and v.error is None and v.batches_per_sec]


def left_out(ablation: Ablation) -> dict[str, str]:
    """Changes the together run must not include, with the reason for the report."""
    out = {}
    for e in ablation.effects:
        if e.effect == "harm":
            out[e.change] = f"measured alone: {e.speedup:.2f}x, slower than the original: left out of the tuned pipeline"
        elif e.effect == "unsafe":
            out[e.change] = f"its output differs from the original's ({e.reason}): left out of the tuned pipeline"
    return out


def plan_alone(keys: list[str]) -> list[tuple[str, ...]]:
    """The runs before the together run. Two or more changes: the control (no change), each
    change alone, and the control again. One change: the control alone (the together run is that
    change alone). None: nothing (the together run is the rebuilt graph itself)."""
    if not keys:
        return []
    if len(keys) == 1:
        return [()]
    return [()] + [(k,) for k in keys] + [()]


def plan_all_but(keys: list[str], thorough: bool) -> list[tuple[str, ...]]:
    """The runs after it, in --thorough mode: all changes but one, so a change that only helps
    in combination shows what the others lose without it. With two changes the alone runs
    already are the all-but runs."""
    if not thorough or len(keys) < 3:
        return []
    return [tuple(k for k in keys if k != key) for key in keys]
