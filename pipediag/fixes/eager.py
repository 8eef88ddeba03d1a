"""The fix for a TensorFlow step that runs eagerly (records.step.EagerUse): compile it with
tf.function. Offered first to a step that limits training (a compute or host verdict), in place
of XLA, which compiles only what tf.function has made a graph; measured where pipediag could wrap
the step itself (a `--step` fed TensorFlow tensors), else said to be unmeasured, with why."""

from __future__ import annotations

from dataclasses import dataclass

from pipediag.analysis.ablation import MIN_GAIN
from pipediag.records.step import EagerUse


@dataclass(frozen=True)
class CompiledStepAdvice:
    """What to say about compiling the step: the fix's basis and measured speedup, or (`offered`
    False) a note that the measurement found no gain worth the change."""

    offered: bool
    basis: str
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None


def compiled_step_advice(eager: EagerUse | None) -> CompiledStepAdvice | None:
    """None where the step did not run eagerly (or nobody watched)."""
    if eager is None or not eager.eager:
        return None
    seen = (f"the step read its gradient tape outside any tf.function {eager.eager_gradients} times in "
            f"{eager.steps} steps with free input (synthetic mode): each of its ops is dispatched from Python, one at a time")
    if eager.speedup is None:
        why = eager.compiled_missing or "the step in tf.function was not timed"
        return CompiledStepAdvice(True, f"not measured ({why}): {seen}")
    ci = eager.speedup_ci
    ci_text = "" if ci is None else f" (95%: {ci[0]:.2f}-{ci[1]:.2f}x)"
    rates = (f"{eager.compiled_rate:.1f} against {eager.eager_rate:.1f} steps/s eagerly, on synthetic mode's "
             "constant batch")
    if eager.speedup < MIN_GAIN:
        return CompiledStepAdvice(False, f"the step runs eagerly, but wrapped in tf.function by pipediag it ran "
                                         f"{eager.speedup:.2f}x{ci_text} ({rates}): no gain worth the change")
    return CompiledStepAdvice(True, f"measured: the step wrapped in tf.function by pipediag ran "
                                    f"{eager.speedup:.2f}x{ci_text} ({rates}); {seen}",
                              eager.speedup, ci)
