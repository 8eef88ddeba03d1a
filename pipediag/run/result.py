"""From a finished (or stopped, interrupted, failed) script to the Diagnosis `diagnose` gives:
the same conclusion chain (api.diagnose.conclude_run), with the script and the training
dataset's construction site as its target, and what the script did in its notes."""

from __future__ import annotations

from dataclasses import replace

from pipediag.api.diagnose import conclude_run
from pipediag.errors import UserCodeError
from pipediag.fixes.epoch_starts import with_start_fix
from pipediag.results.diagnose import Diagnosis
from pipediag.run.launch import FINISHED, INTERRUPTED, RAISED, STOPPED, Ending
from pipediag.run.session import THEN_CONTINUE, Fault, Session
from pipediag.verdict.epoch_starts import limits_training, with_epoch_starts, worth_a_fix


def weights_note(windows_run) -> str:
    """What the windows that ran trained the model on: the tuned window is skipped where it could
    not change the fixes (fixes.worth_tuning), and then the note does not claim it."""
    if "tuned" in windows_run:
        return ("the synthetic window trained your model on one repeated batch, and the tuned window on the tuned "
                "pipeline's batches, for a few seconds each: the weights changed")
    return "the synthetic window trained your model on one repeated batch for a few seconds: the weights changed"


def conclude_script(session: Session, ending: Ending, log, elapsed_s: float, label: str) -> tuple[Diagnosis, Fault | None]:
    """The diagnosis, and the fault that kept it from completing (None when it completed)."""
    state, plan = session.state, session.plan
    fault = session.fault
    training = session.training or _most_taken(session)
    if "pipeline" not in state.runs and training is not None:
        run = training.pipeline_run("interrupted")
        if run is not None:
            state.runs["pipeline"] = run
    partial: list[str] = []
    if not session.windows_done.is_set() or state.interrupted:  # the script ended before the windows did
        partial = _partial_windows(state)
        if ending.how == RAISED:
            state.failure = UserCodeError("script", ending.error)
        else:
            state.interrupted = True
            if ending.how != INTERRUPTED and fault is None:
                fault = _ended_early(session, ending, training)
    diagnosis = conclude_run(state, log, plan.rule, None if state.element is None else state.element.batch_size,
                             training.batch_format if training else "tf", elapsed_s, plan.ram_budget_bytes)
    found = None if training is None else training.starts_found
    if diagnosis.verdict is not None:  # the epoch starts' share of the time, in the verdict and the fixes
        verdict = with_epoch_starts(diagnosis.verdict, found)
        diagnosis = replace(diagnosis, verdict=verdict, fixes=with_start_fix(diagnosis.fixes, found, verdict))
    notes = partial + list(diagnosis.notes) + _script_notes(session, ending, training)
    synthetic = state.runs.get("synthetic")
    if partial and synthetic is not None and synthetic.stop_reason == "interrupted":
        diagnosis = replace(diagnosis, verdict=None, fixes=(), tried=())
    return replace(diagnosis, target=_target(label, training), notes=tuple(notes),
                   settings={**diagnosis.settings, **_settings(session, label, training)}), fault


def _partial_windows(state) -> list[str]:
    """Notes on the windows the script's end (or an interrupt) cut short. They stay in the report,
    as measured; a cut-short synthetic window is no rate to decide on, so there is then no verdict."""
    notes = []
    for name, run in state.runs.items():
        if name != "pipeline" and run.stop_reason == "interrupted":
            notes.append(f"inconclusive: the {name} window was cut short after {run.steps} timed step(s); "
                         + ("no verdict is drawn from a partial window" if name == "synthetic" else
                            "what it measured is shown, not relied on"))
    return notes


def _most_taken(session: Session):
    taken = [s for s in session.sources.values() if s.taken]
    return max(taken, key=lambda s: s.taken) if taken else None


def _target(label: str, training) -> str:
    if training is None:
        return f"{label} (pipediag run: no tf.data dataset iterated)"
    return f"{label} (pipediag run; training dataset built at {training.where()})"


def _ended_early(session: Session, ending: Ending, training) -> Fault:
    if training is None:
        return Fault(f"the script {ending.text()} without taking a batch from any tf.data dataset",
                     "pipediag run diagnoses scripts that iterate a tf.data.Dataset (a Python loop or model.fit)", 1)
    n = training.steps.steps
    need = (f"{session.plan.observe_steps} timed steps after {training.warmup_steps} warm-up steps"
            if session.plan.observe_steps else "a stable step rate")
    when = "before the observation was enough" if session.training is None else "during the windows"
    if session.budget_short is not None:
        what, hint = session.budget_short
        return Fault(f"{what}; it {ending.text()} after {n} step(s) of {training.name()}, {when}: the report has what "
                     "was measured, inconclusive", hint, 1)
    return Fault(f"the script {ending.text()} after {n} step(s) of {training.name()}, {when} (it needs {need}); "
                 "the report has what was measured, inconclusive", "let the script train longer (more steps or "
                 "epochs), give a smaller --observe-steps and --window-seconds, or diagnose the pipeline in a builder "
                 "('pipediag diagnose file.py:make_dataset --model file.py:make_model'), which repeats it", 1)


def _script_notes(session: Session, ending: Ending, training) -> list[str]:
    notes = []
    others = [s for s in session.sources.values() if s is not training and (s.taken or s.iterators)]
    if training is not None:
        chosen = ("the one model.fit got" if training.kind == "fit" else
                  "the first one whose steps reached a stable rate" if session.training is training else
                  "the one iterated most (no dataset reached a stable rate)")
        notes.append(f"training dataset: {training.name()}, {chosen}; {training.taken} batches taken")
    starts = None if training is None else training.epoch_starts
    if starts and starts.get("found") and not limits_training(training.starts_found):
        # a share that limits training is the verdict, and its fix is a fix; a smaller one is decided between
        # the starts, which this says, and a share too small for a fix keeps its fix here
        notes += [starts["text"]] + ([] if worth_a_fix(training.starts_found) else [starts["fix"]])
    for s in others:
        notes.append(f"also iterated: {s.name()}, {s.taken} batches (not diagnosed)")
    if "synthetic" in session.state.runs:
        notes.append(weights_note(session.state.runs) + ("; training then went on from them (--then continue)"
                                     if session.plan.then == THEN_CONTINUE else "; the script was then stopped"))
    if training is not None and training.after_text():
        notes.append(training.after_text())
    if session.training is not None and session.handoff.steps:
        notes.append("in the windows each step is the time from handing your loop a batch to its next request, "
                     "through a thread hand-over of some tens of microseconds")
    if ending.how not in (STOPPED, FINISHED):
        notes.append(f"the script {ending.text()}")
    return notes


def _settings(session: Session, label: str, training) -> dict:
    plan = session.plan
    return {
        "source": "pipediag run",
        "script": label,
        "hook": None if training is None else training.kind,
        "dataset_site": None if training is None or training.site is None else training.site.to_dict(),
        "observed_until": session.observed_by,
        "observe_steps": plan.observe_steps,
        "step_budget": None if session.budget is None else {"total": session.budget.total, "how": session.budget.how,
                                                            "fits": session.budget_short is None},
        "epoch_starts": None if training is None else training.epoch_starts,
        "then": plan.then,
        "datasets": [{"number": s.number, "site": None if s.site is None else s.site.to_dict(), "kind": s.kind,
                      "batches_taken": s.taken, "iterators": s.iterators} for s in session.sources.values()],
    }
