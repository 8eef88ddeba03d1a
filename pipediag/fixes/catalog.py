"""Every fix kind pipediag knows: a title and a code snippet, filled in with the user's stage.

Snippets show the change in the user's terms (`map(decode_example)` becomes
`map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)`), not generic advice.
"""

from __future__ import annotations

FIX_KINDS = (
    "prefetch", "parallel_map", "interleave", "cache", "vectorize_map", "snapshot", "tf_data_service",
    "mixed_precision", "xla", "batch_size", "memory_growth", "threading",
)


def _fn(stage: str | None, default: str = "fn") -> str:
    """`map(decode_example)` -> `decode_example`."""
    if stage and "(" in stage and stage.endswith(")"):
        inner = stage[stage.index("(") + 1 : -1]
        if inner.isidentifier():
            return inner
    return default


def title(kind: str, stage: str | None) -> str:
    where = f" `{stage}`" if stage else ""
    if stage and kind in _STAGE_TITLES:
        return _STAGE_TITLES[kind](stage)
    return {
        "prefetch": "Overlap input with the step: end the pipeline with prefetch(AUTOTUNE)",
        "parallel_map": f"Run{where} in parallel: it runs on one core",
        "interleave": f"Read in parallel:{where} reads one source at a time",
        "cache": f"Cache after{where}: the deterministic work is redone every epoch",
        "vectorize_map": f"Batch before{where}: per-element calls cost more than the work",
        "snapshot": f"Snapshot after{where} to disk: it does not fit in memory",
        "tf_data_service": "Move preprocessing off this host with tf.data service",
        "mixed_precision": "Train in mixed precision (bfloat16/float16 compute)",
        "xla": "Compile the step with XLA (jit_compile=True)",
        "batch_size": "Change the batch size",
        "memory_growth": "Let TensorFlow allocate GPU memory as needed (memory growth)",
        "threading": "Give tf.data more threads than cores for slow reads",
    }[kind]


# Titles that start from the user's own stage: "`map(decode_example)` runs on one core: ...".
_STAGE_TITLES = {
    "parallel_map": lambda s: f"`{s}` runs on one core: add num_parallel_calls=tf.data.AUTOTUNE",
    "interleave": lambda s: (f"`{s}` runs serially: add num_parallel_calls=tf.data.AUTOTUNE" if s.startswith("interleave")
                             else f"`{s}` reads its files one after another: read several at once"),
    "cache": lambda s: f"`{s}` redoes the same deterministic work every epoch: cache() after it",
    "vectorize_map": lambda s: f"`{s}` runs once per element: batch first, then map whole batches",
    "snapshot": lambda s: f"`{s}`'s output does not fit in memory: snapshot() it to disk",
}


def _size(nbytes) -> str:
    if nbytes is None:
        return ""
    return f"~{nbytes / 2**30:.1f} GiB" if nbytes >= 2**30 else f"~{nbytes / 2**20:.0f} MiB"


def code(kind: str, stage: str | None, **details) -> str:
    fn = _fn(stage)
    if kind == "prefetch":
        return "ds = ds.prefetch(tf.data.AUTOTUNE)  # last line of the pipeline"
    if kind == "parallel_map":
        return f"ds = ds.map({fn}, num_parallel_calls=tf.data.AUTOTUNE)"
    if kind == "interleave":
        if stage and stage.startswith("interleave"):
            return f"ds = ds.interleave({fn}, num_parallel_calls=tf.data.AUTOTUNE)"
        return (
            "files = tf.data.Dataset.from_tensor_slices(filenames).shuffle(len(filenames))\n"
            "ds = files.interleave(tf.data.TFRecordDataset, cycle_length=8,\n"
            "                      num_parallel_calls=tf.data.AUTOTUNE)\n"
            "# or: tf.data.TFRecordDataset(filenames, num_parallel_reads=tf.data.AUTOTUNE)"
        )
    if kind == "cache":
        return f"ds = ds.{stage or 'map(...)'}.cache()  # before the first random step; in memory"
    if kind == "vectorize_map":
        size = details.get("batch_size") or "batch_size"
        return (f"ds = ds.batch({size}).map({fn}, num_parallel_calls=tf.data.AUTOTUNE)\n"
                f"# instead of .map({fn}).batch({size}): {fn} now gets whole batches")
    if kind == "snapshot":
        size = _size(details.get("estimated_bytes"))
        note = f"{size} on disk, " if size else ""
        return f"ds = ds.{stage or 'map(...)'}.snapshot('/fast/disk/snapshot_dir')  # {note}written once, then read back"
    if kind == "tf_data_service":
        return (
            "ds = ds.apply(tf.data.experimental.service.distribute(\n"
            "    processing_mode='parallel_epochs', service='grpc://DISPATCHER:5000'))"
        )
    if kind == "mixed_precision":
        return "keras.mixed_precision.set_global_policy('mixed_bfloat16')  # before building the model"
    if kind == "xla":
        return "model.compile(..., jit_compile=True)  # or @tf.function(jit_compile=True) / jax.jit"
    if kind == "batch_size":
        return details.get("code", "ds = ds.batch(BATCH_SIZE)  # see the title for the direction")
    if kind == "memory_growth":
        return (
            "for gpu in tf.config.list_physical_devices('GPU'):\n"
            "    tf.config.experimental.set_memory_growth(gpu, True)  # before any GPU work"
        )
    if kind == "threading":
        size = details.get("private_threadpool_size", 32)
        return (
            "options = tf.data.Options()\n"
            f"options.threading.private_threadpool_size = {size}\n"
            "ds = ds.with_options(options)"
        )
    raise ValueError(f"unknown fix kind {kind!r}")
