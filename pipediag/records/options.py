"""`RunOptions`: what every entry point (diagnose, compare, scale, sweep, tuned) is told the same way.

One object instead of the same dozen keyword arguments on each entry point, as rich passes one
ConsoleOptions down its render tree. The keyword arguments still work: an entry point called with
`max_seconds=5` builds its RunOptions from them (`run_options`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from pipediag.errors import UsageError


@dataclass(frozen=True)
class RunOptions:
    """The parameters the entry points share. None means "the entry point's default"."""

    model: Any | None = None  # a compiled Keras model; each step is one train_on_batch
    step: Callable[[Any], Any] | None = None  # a step(batch) of any framework (not with model)
    step_label: str | None = None  # how the report names the model or step (the CLI: its --model/--step)
    builder_kwargs: Mapping[str, Any] | None = None  # passed to the dataset builder
    batch_size: int | None = None  # passed to the builder if it takes it; batches an unbatched dataset
    # Without a visible batch op: True, the elements are batches; False, single examples (batched with
    # batch_size); None, read from their shapes (builder.batch_reading)
    batched: bool | None = None
    batch_format: str = "tf"  # what the step takes: steps.step.BATCH_FORMATS
    max_seconds: float | None = None  # per mode (diagnose, scale, sweep) or the whole comparison (compare)
    sample_hz: float | None = None  # CPU/GPU sampling rate; None: samples.sampler.DEFAULT_HZ
    stall_timeout_s: float | None = None  # a batch or step that takes longer ends the run "stalled"
    gpus: str | Sequence[int | str] | None = None  # NVML indices or UUIDs to sample ("0,2")
    nvml_lib: Any | None = None  # an NVML library (backends.fake_nvml in tests and --demo)
    label: str | None = None  # the target's name in the report; None: the builder's __name__
    progress: Any | None = None  # a Progress (api.Progress); None: silent
    clock_ns: Callable[[], int] = time.monotonic_ns

    def label_for(self, builder: Any) -> str:
        """The target's name: the label given, else the builder's own name."""
        return self.label or getattr(builder, "__name__", type(builder).__name__)


NAMES = frozenset(f.name for f in fields(RunOptions))


def run_options(options: RunOptions | None, entry: str, unsupported: tuple[str, ...] = (),
                **given: Any) -> RunOptions:
    """The RunOptions an entry point runs with: `options`, or one built from the keyword
    arguments it was called with (`given`), never both. `unsupported`: fields `entry` does not
    use (compare has two builders, so no `builder_kwargs`); giving one is an error, not ignored."""
    unknown = sorted(set(given) - NAMES)
    if unknown:
        raise TypeError(f"{entry}() got an unexpected keyword argument {unknown[0]!r}")
    if options is not None and given:
        raise UsageError(f"{entry}(): give the run options as options=RunOptions(...) or as keyword arguments "
                         f"({', '.join(sorted(given))}), not both",
                         f"add them to the RunOptions: dataclasses.replace(options, {sorted(given)[0]}=...)")
    chosen = options if options is not None else RunOptions(**given)
    used = [name for name in unsupported if getattr(chosen, name) != getattr(RunOptions, name)]
    if used:
        raise UsageError(f"{entry}() does not take {', '.join(used)}", f"leave {used[0]} out of the options")
    return chosen
