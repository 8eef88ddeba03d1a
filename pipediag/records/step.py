"""What the step under test is, for the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# An eager step reads its tape on every call: at least once a step. A compiled one (Keras' own
# train function, a tf.function) reads it only while tracing, in graph mode: never eagerly. Half a
# read a step leaves room for a step count that includes a step or two the tape did not see.
EAGER_GRADIENTS_PER_STEP = 0.5


@dataclass(frozen=True)
class EagerUse:
    """Whether the step ran TensorFlow op by op from Python (eagerly) in synthetic mode: the
    `tape.gradient` calls made outside any tf.function over the mode's steps
    (backends.tf.eager_gradients_counted), and, where pipediag could wrap the step in tf.function
    itself (a `--step` fed TensorFlow tensors), the wrapped step's rate on the same constant batch."""

    eager_gradients: int  # tape.gradient calls made eagerly over synthetic mode
    steps: int  # the steps of synthetic mode they were counted over, warm-up included
    # The step wrapped in tf.function by pipediag, on synthetic mode's batch: steps per second
    # with its 95% interval, and the eager step's rate it is compared with. None: not measured,
    # and `compiled_missing` says why.
    compiled_rate: float | None = None
    compiled_ci: tuple[float, float] | None = None
    eager_rate: float | None = None
    speedup: float | None = None  # compiled over eager rate
    speedup_ci: tuple[float, float] | None = None
    compiled_missing: str | None = None

    @property
    def eager(self) -> bool:
        return self.steps > 0 and self.eager_gradients >= EAGER_GRADIENTS_PER_STEP * self.steps

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "eager": self.eager}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EagerUse:
        pairs = {k: tuple(data[k]) if data.get(k) is not None else None for k in ("compiled_ci", "speedup_ci")}
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**{**fields, **pairs})


@dataclass(frozen=True)
class StepInfo:
    kind: str  # keras (--model) | user (--step) | standin (neither was given)
    description: str  # what it is, in a sentence the report can show
    batch_format: str = "tf"  # what the step receives: tf tensors, numpy arrays or dlpack objects
    framework: str | None = None  # seen in the step's results: tensorflow | jax | torch | host
    sync: str | None = None  # how pipediag waited for the step's work before stopping the timer
    # Its strategy's replica devices ("gpu:0", "cpu:3"), else those its results lived on
    # (steps.placement); () when unknown (plain values, or nothing returned).
    devices: tuple[str, ...] = ()
    # Whether the step is compiled with XLA already (a Keras model's resolved jit_compile: "auto" is
    # XLA on a GPU); None when unknown. An XLA fix is not offered to a step that has it.
    xla: bool | None = None
    # How the step ran TensorFlow in synthetic mode (eagerly or compiled); None where synthetic
    # mode did not run or TensorFlow could not be watched.
    eager: EagerUse | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["eager"] = None if self.eager is None else self.eager.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepInfo:
        eager = data.get("eager")
        return cls(**{**data, "devices": tuple(data.get("devices") or ()),
                      "eager": None if eager is None else EagerUse.from_dict(eager)})
