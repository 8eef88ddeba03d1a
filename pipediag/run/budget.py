"""The steps a script has left for the diagnosis, and the plan that fits the observation and the
windows inside them (pure numbers, no TensorFlow).

Keras `fit` runs a known number of steps when the dataset's length is known: epochs x steps per
epoch (its `steps_per_epoch`, else the dataset's cardinality). Every step of the observation and
of the windows that run the step (synthetic, tuned and its ablation) is one of those: the windows
feed fit's own step slots, so a short fit (the TF text-classification tutorial: 10 epochs of 251
steps, ~3 ms each) can end inside a window. The plan gives the observation at most
OBSERVE_SHARE of the steps, each window its share of what is left when it starts, and never
less than a window's minimum (its warm-up and `min_steps` timed steps, for a rate); what cannot
fit is said before the script ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from pipediag.records.run import StopRule

OBSERVE_SHARE = 0.4  # of the steps the script has: the observation (the pipeline mode) at most
MARGIN_STEPS = 2  # steps kept back: the request the loop waits in while input_only and the anatomy run


@dataclass(frozen=True)
class StepBudget:
    """`total` steps of the training dataset the script will run from its start (`how`: where that
    number comes from); `steps_per_epoch` when the total is epochs of that length."""

    total: int
    how: str
    steps_per_epoch: int | None = None
    epochs: int | None = None


class OutOfSteps(Exception):
    """A window cannot have its minimum of steps: the script has too few left."""

    def __init__(self, window: str, left: int, needed: int):
        super().__init__(f"{window}: {left} step(s) left, a window needs {needed}")
        self.window, self.left, self.needed = window, left, needed


def window_minimum(rule: StopRule) -> int:
    """Steps one window needs for a rate: its warm-up and `min_steps` timed steps."""
    return rule.warmup_steps + rule.min_steps


def needed(rule: StopRule) -> int:
    """The fewest steps a verdict needs: the observation and the synthetic window, each at its minimum."""
    return 2 * window_minimum(rule) + MARGIN_STEPS


def fits(budget: StepBudget, rule: StopRule) -> bool:
    return budget.total >= needed(rule)


def observe_cap(budget: StepBudget, rule: StopRule, warmup_steps: int | None = None) -> int:
    """Steps (warm-up included) after which the observation ends, stable or not: OBSERVE_SHARE of
    the script's steps. `warmup_steps`: the observation's own warm-up when it was longer than the
    rule's (a first pass that fills a cache is warm-up): then the share is of the steps after it,
    and at least `min_steps` of them, as long as the synthetic window keeps its minimum after the
    observation. Without that, a 25-batch first epoch of a 75-step fit left the observation 5
    timed steps of its 30 (the TF load-images tutorial, 2026-12-03): inconclusive."""
    share = max(window_minimum(rule), int(budget.total * OBSERVE_SHARE))
    if warmup_steps is None or warmup_steps <= rule.warmup_steps:
        return share
    after = warmup_steps + max(rule.min_steps, int((budget.total - warmup_steps) * OBSERVE_SHARE))
    room = budget.total - window_minimum(rule) - MARGIN_STEPS  # the synthetic window's minimum after it
    return max(share, min(after, room))


def window_steps(left: int, rule: StopRule, windows_left: int, name: str) -> int:
    """Steps (warm-up included) a window may take when `left` steps remain and `windows_left`
    windows (this one included) still want theirs; OutOfSteps below the window's minimum."""
    share = (left - MARGIN_STEPS) // max(windows_left, 1)
    if share < window_minimum(rule):
        share = left - MARGIN_STEPS  # the last window that fits takes what is left
    if share < window_minimum(rule):
        raise OutOfSteps(name, left, window_minimum(rule) + MARGIN_STEPS)
    return share


def capped(rule: StopRule, steps: int) -> StopRule:
    """`rule` with at most `steps` steps, warm-up included."""
    return replace(rule, max_steps=min(rule.max_steps, max(1, steps - rule.warmup_steps)))


def plan_text(budget: StepBudget, rule: StopRule) -> str:
    """What the plan was, for the report."""
    return (f"the script runs {budget.total} steps on its training dataset ({budget.how}): pipediag run planned "
            f"the observation for at most {observe_cap(budget, rule)} of them and gave each window that runs your step "
            f"its share of the rest, at least {window_minimum(rule)} ({rule.warmup_steps} warm-up + {rule.min_steps} "
            "timed) each, so that the windows end before the script does")


def shortfall(budget: StepBudget, rule: StopRule) -> tuple[str, str]:
    """(what, what to do) when even the smallest plan does not fit in the script's steps."""
    need = needed(rule)
    what = (f"the script runs only {budget.total} steps on its training dataset ({budget.how}); the observation and "
            f"the synthetic window need at least {need} ({window_minimum(rule)} each: {rule.warmup_steps} warm-up + "
            f"{rule.min_steps} timed, and {MARGIN_STEPS} held back): the script will end before a verdict")
    if budget.steps_per_epoch and budget.epochs:
        epochs = max(budget.epochs + 1, math.ceil(need / budget.steps_per_epoch))
        more = f"run it with at least {epochs} epochs for the diagnosis"
    else:
        more = "let it run more steps for the diagnosis"
    return what, (f"{more}, or diagnose the pipeline in a builder, which repeats it: 'pipediag diagnose "
                  "file.py:make_dataset --model file.py:make_model'")
