"""Timing the hand-over: one already-produced batch given to the step, again and again.

The dataset repeats one cached batch behind a prefetch buffer (`from_tensors(batch).repeat()
.prefetch(1)`), so each `get_next` takes a batch that is already made, as from a pipeline that
keeps up; it goes through the same feed as the pipeline's batches (the same conversion to the
step's batch format), and then, for a step whose framework works on an accelerator, through
the device copy that step makes (`jax.device_put`, `.to("cuda")`, a TensorFlow copy to GPU:0),
waited for. What is left out is exactly the pipeline's own work.

A step under a tf.distribute strategy takes its batches from the strategy's distributed iterator:
the repeated batch then goes through the same kind of distributed iterator (`feed_of`), whose
`get_next` splits it and puts each replica's slice on its device, so there is no copy of its own.
That iterator's per-call cost is the loop's, whatever the pipeline: in the TF tutorial's custom
MirroredStrategy loop on 2 CPU cores a ready batch cost ~1.0 ms a step that way, against 0.002 ms
held (benchmarks/results/distributed-next-cpu-2026-12-03.md).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from pipediag.analysis.handover import Handover, handover_from_run
from pipediag.backends.tf import tf
from pipediag.errors import MeasurementError, UserCodeError
from pipediag.modes.feeds import BatchFeed, DlpackTensor
from pipediag.modes.runner import run_mode
from pipediag.records.kinds import INTERRUPTED
from pipediag.records.run import StopRule

# A hand-over is sub-millisecond to a few ms: a second holds hundreds to thousands of them, and the
# verdict compares it with the fed step's wait with a 2x margin (HANDOVER_WAIT_MARGIN). A 3-s cap
# (before issue 26) was reached on the demo with 26,620 hand-overs timed, 3 s of a 14-s diagnosis.
MAX_SECONDS = 1.0
MIN_SECONDS = 0.3


def repeated_batch(batch: Any):
    """A dataset that only repeats `batch`, already produced, from a prefetch buffer."""
    return tf.data.Dataset.from_tensors(batch).repeat().prefetch(1)


def _leaves(batch: Any) -> list[Any]:
    return tf.nest.flatten(batch, expand_composites=True)  # ragged and sparse: their component tensors


def host_leaves(batch: Any) -> list[Any]:
    """The arrays of a batch, in whatever batch format the feed yields, as a device copy takes them:
    TensorFlow tensors (the `tf` format) as NumPy arrays, which `jax.device_put` and `torch.as_tensor`
    take (they do not take a `tf.Tensor`: on the H200, "Cannot interpret 'tf.float32' as a data type");
    DLPack tensors, NumPy arrays and PyTorch tensors as they are. Strings are left out: no device
    takes them, and a step keeps them on the host."""
    out = []
    for x in _leaves(batch):
        if isinstance(x, tf.Tensor):
            if x.dtype in (tf.string, tf.variant, tf.resource):
                continue
            x = x.numpy()
        elif isinstance(x, DlpackTensor) and not isinstance(x.tensor, tf.Tensor):
            out.extend(host_leaves(x.tensor))  # a ragged or sparse tensor: no DLPack, its components
            continue
        elif isinstance(x, DlpackTensor) and x.tensor.dtype == tf.string:
            continue
        if isinstance(x, np.ndarray) and x.dtype.kind in "OSU":
            continue
        out.append(x)
    return out


def jax_copy(jax: Any, device: Any) -> Callable[[Any], Any]:
    """`jax.device_put` of each batch's arrays to `device`, waited for."""

    def to_jax(batch: Any) -> Any:
        leaves = [jax.dlpack.from_dlpack(x) if isinstance(x, DlpackTensor) else x for x in host_leaves(batch)]
        return jax.block_until_ready(jax.device_put(leaves, device))

    return to_jax


def torch_copy(torch: Any, device: str) -> Callable[[Any], Any]:
    """`.to(device)` of each batch's arrays, waited for (torch.cuda.synchronize on a CUDA device)."""

    def to_torch(batch: Any) -> Any:
        with warnings.catch_warnings():  # the numpy format's arrays are read-only views: only read here
            warnings.filterwarnings("ignore", "The given NumPy array is not writable")
            out = [torch.as_tensor(torch.from_dlpack(x) if isinstance(x, DlpackTensor) else x).to(device)
                   for x in host_leaves(batch)]
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return out

    return to_torch


def device_copy(framework: str | None, batch_format: str) -> tuple[Callable[[Any], Any] | None, str]:
    """The host-to-device copy the step makes of each batch, waited for, and how it was made;
    (None, why) when the step's framework works on no accelerator here."""
    if framework == "jax" and "jax" in sys.modules:
        jax = sys.modules["jax"]
        device = jax.devices()[0]
        if device.platform == "cpu":
            return None, "JAX runs on the CPU here: there is no device copy"
        return jax_copy(jax, device), f"jax.device_put to {device}, waited for"
    if framework == "torch" and "torch" in sys.modules:
        torch = sys.modules["torch"]
        if not torch.cuda.is_available():
            return None, "PyTorch has no CUDA device here: there is no device copy"
        return torch_copy(torch, "cuda"), "tensor.to('cuda') and torch.cuda.synchronize()"
    if framework == "tensorflow" and batch_format == "tf" and tf.config.list_logical_devices("GPU"):

        def to_gpu(batch: Any) -> Any:
            with tf.device("/GPU:0"):
                out = [tf.identity(x) for x in _leaves(batch) if x.dtype not in (tf.string, tf.variant)]
            tf.test.experimental.sync_devices()
            return out

        return to_gpu, "tf.identity on /GPU:0 and sync_devices()"
    return None, f"the step's framework ({framework or 'unknown'}) uses no accelerator here: there is no device copy"


def measure_handover(batch: Any, batch_format: str, framework: str | None, rule: StopRule, *,
                     clock_ns: Callable[[], int], feed_of: Callable[[Any], BatchFeed] | None = None,
                     through: str | None = None) -> Handover | None:
    """Time `batch` handed over through the feed of `batch_format` (and the step's device copy).
    `feed_of(dataset)`, with `through` saying what it is: the distributed feed the step's batches
    come through (a tf.distribute strategy's iterator, which places each slice on its device)."""
    if feed_of is None:
        copy, text = device_copy(framework, batch_format)
        feed = BatchFeed(repeated_batch(batch), batch_format, keep_first=0)
    else:
        copy, text = None, f"{through or 'the distributed iterator'} puts each replica's slice on its device in get_next"
        feed = feed_of(repeated_batch(batch))
    short = replace(rule, max_seconds=min(rule.max_seconds, MAX_SECONDS), min_seconds=min(rule.min_seconds, MIN_SECONDS))
    try:
        run = run_mode("handover", feed, copy, short, clock_ns=clock_ns)
    except UserCodeError as error:
        # Nothing of the user's runs here: the batch is made, the feed and the copy are pipediag's.
        raise MeasurementError(f"hand-over timing ({text})", error.error) from error
    finally:
        feed.close()
    if run.stop_reason == INTERRUPTED:
        raise KeyboardInterrupt  # Ctrl-C: the diagnosis ends with what its modes measured
    return handover_from_run(run, batch_format, text, copy is not None, through=through if feed_of else None)
