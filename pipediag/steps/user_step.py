"""A user's own step for `--step`: any framework, synchronised before the timer stops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipediag.errors import UsageError
from pipediag.steps.step import Observed, Step, StepInfo
from pipediag.steps.sync import HOST, DeviceBarrier, wait_until_computed

_SYNC = {
    "jax": "block_until_ready() on the step's JAX arrays",
    "torch": "torch.cuda.synchronize() after the step (CPU tensors need none)",
    "tensorflow": "TensorFlow tensors: sync_devices() when they live on a GPU",
    HOST: "the step returned plain values (Python/NumPy), computed by the time it returned",
}


class _Tracker:
    """Sees what the step returns and, when that holds nothing to wait on, waits on the device."""

    def __init__(self) -> None:
        self.framework: str | None = None
        self.sync: str | None = None
        self.barrier: DeviceBarrier | None = None

    def after(self, result: Any) -> None:
        seen = wait_until_computed(result)
        if seen is None or (seen == HOST and self.barrier is not None):
            # Nothing to wait on: a step that keeps its state to itself and returns None.
            if self.barrier is None:
                self.barrier = DeviceBarrier()
            waited = self.barrier.wait()
            if self.sync is None:
                self.sync = (
                    "the step returned nothing to wait on; pipediag waits for "
                    + (", ".join(waited) + " device work with a barrier" if waited else "nothing (no accelerator work seen)")
                )
            return
        if self.framework is None or self.framework == HOST:
            self.framework = seen
            self.sync = _SYNC.get(seen)

    def observed(self) -> Observed:
        return Observed(self.framework, self.sync)


def user_step(fn: Any, label: str, batch_format: str) -> Step:
    if not callable(fn):
        raise UsageError(
            f"--step {label} returned a {type(fn).__name__}, not a function",
            "the spec names a factory: a function that returns step(batch)",
        )
    step_fn: Callable[[Any], Any] = fn
    tracker = _Tracker()

    def dispatch(batch: Any) -> Callable[[], Any]:
        result = step_fn(batch)

        def finish() -> Any:
            tracker.after(result)
            return result

        return finish

    def run(batch: Any) -> Any:
        return dispatch(batch)()

    name = getattr(fn, "__name__", type(fn).__name__)
    return Step(
        run=run,
        info=StepInfo(
            kind="user",
            description=f"step function '{name}' from {label}, fed {batch_format} batches",
            batch_format=batch_format,
        ),
        observed=tracker.observed,
        dispatch=dispatch,
    )
