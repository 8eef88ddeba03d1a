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
        return f"ds = ds.batch(batch_size).map({fn}, num_parallel_calls=tf.data.AUTOTUNE)  # {fn} must accept a batch"
    if kind == "snapshot":
        return f"ds = ds.{stage or 'map(...)'}.snapshot('/fast/disk/snapshot_dir')  # filled once, then read back"
    if kind == "tf_data_service":
        command = details.get("command") or "pipediag scale data.py:make_dataset --workers 1,2,4 --accelerators 1,8"
        return (
            "# measure first: how many workers it takes, and whether it is worth it\n"
            f"#   {command}\n"
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
