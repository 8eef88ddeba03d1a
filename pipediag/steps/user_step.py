"""A user's own step for `--step`: any framework, synchronised before the timer stops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipediag.errors import UsageError
from pipediag.records.step import StepInfo
from pipediag.steps.placement import devices_of, in_order
from pipediag.steps.step import Observed, Step
from pipediag.steps.sync import HOST, DeviceBarrier, wait_until_computed

_SYNC = {
    "jax": "block_until_ready() on the step's JAX arrays",
    "torch": "torch.cuda.synchronize() after the step (CPU tensors need none)",
    "tensorflow": "TensorFlow tensors: sync_devices() when they live on a GPU",
    HOST: "the step returned plain values (Python/NumPy), computed by the time it returned",
}


# The devices of the first results are read; later ones hold no news and would cost every step.
_RESULTS_FOR_DEVICES = 3


class _Tracker:
    """Sees what the step returns and, when that holds nothing to wait on, waits on the device."""

    def __init__(self) -> None:
        self.framework: str | None = None
        self.sync: str | None = None
        self.barrier: DeviceBarrier | None = None
        self.devices: set[str] = set()
        self._results = 0

    def after(self, result: Any) -> None:
        seen = wait_until_computed(result)
        if self._results < _RESULTS_FOR_DEVICES:
            self._results += 1
            self.devices.update(devices_of(result))
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
        return Observed(self.framework, self.sync, in_order(self.devices))


def user_step(fn: Any, label: str, batch_format: str) -> Step:
    if not callable(fn):
        raise UsageError(
            f"--step {label} returned a {type(fn).__name__}, not a function",
            "the spec names a factory: a function that returns step(batch)",
        )
    step_fn: Callable[[Any], Any] = fn
    tracker = _Tracker()
    strategy = None
    if getattr(fn, "distribute_strategy", None) is not None:  # only then is TensorFlow needed here
        from pipediag.steps.distributed import is_distributed, replica_devices, split_batch, strategy_of

        strategy = strategy_of(fn)
        if strategy is not None and batch_format != "tf":
            raise UsageError(
                f"--step {label} carries a tf.distribute strategy, which takes TensorFlow tensors, but the batch "
                f"format is {batch_format}",
                "leave out --batch-format (tf is the default)",
            )

    def dispatch(batch: Any) -> Callable[[], Any]:
        if strategy is not None and not is_distributed(batch):
            batch = split_batch(batch, strategy)  # a plain batch (compare, scale): one slice per replica
        result = step_fn(batch)

        def finish() -> Any:
            tracker.after(result)
            return result

        return finish

    def run(batch: Any) -> Any:
        return dispatch(batch)()

    def compiled() -> Step:
        from pipediag.backends.tf import tf

        return user_step(tf.function(fn), f"{label}, wrapped in tf.function by pipediag", batch_format)

    name = getattr(fn, "__name__", type(fn).__name__)
    return Step(
        run=run,
        info=StepInfo(
            kind="user",
            description=f"step function '{name}' from {label}, fed {batch_format} batches"
            + ("" if strategy is None else f", per replica on {strategy.num_replicas_in_sync} devices "
               f"({type(strategy).__name__})"),
            batch_format=batch_format,
            devices=() if strategy is None else replica_devices(strategy),
        ),
        observed=tracker.observed,
        dispatch=dispatch,
        strategy=strategy,
        compiled=compiled if batch_format == "tf" and strategy is None else None,
    )
