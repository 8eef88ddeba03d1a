"""What every entry point does with its RunOptions first: check the step options, and resolve
the defaults that live below records (the stop rule's, the sampler's)."""

from __future__ import annotations

from dataclasses import replace

from pipediag.errors import UsageError
from pipediag.records.options import RunOptions
from pipediag.records.run import StopRule
from pipediag.samples.sampler import DEFAULT_HZ
from pipediag.steps.step import BATCH_FORMATS


def check_step_options(options: RunOptions) -> None:
    """The checks every entry point that builds a step makes of the options first."""
    if options.model is not None and options.step is not None:
        raise UsageError("give a model or a step, not both", "--model for a Keras model, --step for your own step")
    if options.batch_format not in BATCH_FORMATS:
        raise UsageError(f"unknown batch format {options.batch_format!r}", f"use one of {', '.join(BATCH_FORMATS)}")


def stop_rule_for(options: RunOptions, stop_rule: StopRule | None) -> StopRule:
    """The rule a mode stops by: `stop_rule` (or the default) with the options' max_seconds, if given."""
    rule = stop_rule or StopRule()
    return rule if options.max_seconds is None else replace(rule, max_seconds=options.max_seconds)


def sample_hz(options: RunOptions) -> float:
    return DEFAULT_HZ if options.sample_hz is None else options.sample_hz
