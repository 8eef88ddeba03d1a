"""The named values pipediag's records carry, as Literal types, and constants for the ones code compares often.

The strings are the JSON's: a file written before these types existed reads the same.
"""

from __future__ import annotations

from typing import Literal

# What limits training (records.verdict, decided by verdict.rules): the step, the input pipeline, memory, the host's CPU, or
# not decidable from the numbers measured.
Bottleneck = Literal["compute", "input", "memory", "host", "inconclusive"]
Confidence = Literal["high", "medium", "low"]

# How a run ended: measured to the end, Ctrl-C/SIGTERM, a batch or step past its deadline, or the
# user's code raised after some modes were measured.
Status = Literal["complete", "interrupted", "stalled", "failed"]
COMPLETE: Status = "complete"
INTERRUPTED: Status = "interrupted"
STALLED: Status = "stalled"
FAILED: Status = "failed"

# Why one mode's measurement stopped (modes.runner), and why compare's rounds stopped (modes.compare).
# "decided": stopped once the readings that decide the verdict were clear of their lines (verdict.sequential).
StopReason = Literal["stable", "decided", "time_cap", "max_steps", "out_of_memory", "interrupted", "input_exhausted", "stalled"]
RoundsStop = Literal["clear", "round_cap", "time_cap", "interrupted", "out_of_memory", "input_exhausted", "stalled",
                     "failed"]
OUT_OF_MEMORY = "out_of_memory"
INPUT_EXHAUSTED = "input_exhausted"
TIME_CAP = "time_cap"
DECIDED = "decided"
ROUND_CAP = "round_cap"

# The fixes pipediag recommends (fixes.recommend) and the tuned mode's changes (tuner.rewrite).
FixKind = Literal[
    "snapshot", "decode_crop", "batch_size", "gradient_accumulation", "mixed_precision", "allocator",
    "memory_growth", "xla", "cpu_quota", "steps_per_call", "device_prefetch", "batch_format", "vectorize_map",
    "shuffle_buffer", "tf_data_service", "decode_reduced", "static_batches", "one_iterator", "tf_function",
]
ChangeKind = Literal[
    "parallel_map", "interleave", "decode_crop", "cache", "prefetch", "threading", "vectorize_map", "snapshot",
    "decode_reduced",
]

# One batch size of a sweep or a baseline profile: measured, out of memory, not run, or where
# the run was interrupted or stalled.
PointStatus = Literal["ok", "out_of_memory", "skipped", "interrupted", "stalled"]
OK = "ok"
SKIPPED = "skipped"

# One prefix of the pipeline read fresh while a batch was awaited (modes.probe): it yields elements,
# gave nothing before its deadline, gave some then stopped, is a buffer that needs longer to fill
# than the probe waits, or could not be read.
ProbeState = Literal["yields", "nothing", "stopped", "filling", "failed"]
YIELDS: ProbeState = "yields"
NOTHING: ProbeState = "nothing"
STOPPED: ProbeState = "stopped"
FILLING: ProbeState = "filling"
FAILED_READ: ProbeState = "failed"
