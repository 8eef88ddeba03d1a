"""Every fix kind pipediag knows: a title and a code snippet, filled in with the user's stage.

Snippets show the change in the user's terms (`map(decode_example)` becomes
`map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)`), not generic advice. Fixes to the step
itself are written for the step's framework (`framework=` jax, torch or tensorflow/Keras).
"""

from __future__ import annotations

import math
from typing import Any

from pipediag.fixes.step_code import STEP_KINDS, step_code

FIX_KINDS = (
    "prefetch", "parallel_map", "interleave", "cache", "vectorize_map", "snapshot", "tf_data_service",
    "mixed_precision", "xla", "batch_size", "memory_growth", "threading", "gradient_accumulation", "allocator",
    "shuffle_buffer", "decode_crop", "steps_per_call", "device_prefetch", "batch_format", "cpu_quota",
    "decode_reduced", "static_batches", "one_iterator", "tf_function",
)


def _sampled_box_code(fn: str, details: dict) -> str:
    """The inception-style crop (tensorflow/models' `random_crop_image_v2`, TF-slim's
    `distorted_bounding_box_crop` on the bytes): the box is drawn from the header's shape."""
    decoder = details.get("decoder") or "decode_jpeg"
    lines = [
        f"# in {fn}: instead of {decoder}(jpeg, channels=3), then tf.slice(image, begin, size) with the box of",
        "# sample_distorted_bounding_box(tf.shape(image), ...): draw the box from the JPEG's header",
        "shape = tf.image.extract_jpeg_shape(jpeg)  # reads the header only",
        "begin, size, _ = tf.image.sample_distorted_bounding_box(shape, bbox, ...)  # the same arguments as before",
        "image = tf.image.decode_and_crop_jpeg(jpeg, tf.stack([begin[0], begin[1], size[0], size[1]]), channels=3)",
    ]
    if details.get("center_crop"):
        lines += [
            "# the tf.cond that center-crops the whole image (the box fell back to all of it): its window, from `shape`",
            "#   decode_and_crop_jpeg(jpeg, tf.stack([offset_y, offset_x, crop_size, crop_size]), channels=3)",
        ]
    lines.append(f"# {decoder} also decodes PNG and GIF, decode_and_crop_jpeg only JPEG: where the files may be other "
                 "formats, keep the old code in tf.cond(tf.io.is_jpeg(jpeg), ...)")
    return "\n".join(lines)


def _fn(stage: str | None, default: str = "fn") -> str:
    """`map(decode_example)` -> `decode_example`."""
    if stage and "(" in stage and stage.endswith(")"):
        inner = stage[stage.index("(") + 1 : -1]
        if inner.isidentifier():
            return inner
    return default


def title(kind: str, stage: str | None, framework: str | None = None, python: bool = False,
          form: str | None = None) -> str:
    """`python`: the stage runs Python for every element (a generator, tf.py_function).
    `form`: "csv" for a vectorize_map that parses CSV a batch of lines at a time."""
    where = f" `{stage}`" if stage else ""
    if kind == "vectorize_map" and form == "csv":
        return (f"`{stage or 'CsvDataset'}` parses the CSV one row at a time: read lines, batch them, "
                "then decode_csv whole batches")
    if kind == "vectorize_map" and python and stage:
        return (f"`{stage}` runs Python for every element, one at a time (the GIL): "
                "make whole batches with TensorFlow ops instead")
    if kind == "xla" and framework == "jax":
        return "Compile the whole step with jax.jit, so XLA fuses it into few kernels"
    if kind == "xla" and framework == "torch":
        return "Compile the step with torch.compile (fused kernels, CUDA graphs)"
    if kind == "allocator" and framework == "torch":
        return "Let PyTorch's allocator grow segments instead of fragmenting (expandable_segments)"
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
        "tf_function": "Compile the step with tf.function: it runs eagerly, one op at a time from Python",
        "batch_size": "Change the batch size",
        "memory_growth": "Let TensorFlow allocate GPU memory as needed (memory growth)",
        "threading": "Give tf.data more threads than cores for slow reads",
        "gradient_accumulation": "Accumulate gradients over smaller batches (same effective batch, less memory)",
        "allocator": "Let JAX use more of the GPU's memory (it reserves 75% by default)",
        "shuffle_buffer": "Shuffle with a smaller buffer, and get the randomness from the file order",
        "decode_crop": f"Decode only the crop window:{where} decodes whole JPEGs, then crops",
        "decode_reduced": f"Decode JPEGs at a reduced size:{where} decodes whole JPEGs, then shrinks them",
        "steps_per_call": "Run several batches per compiled call: one hand-over for many steps",
        "device_prefetch": "Copy the next batch to the device while the step runs",
        "batch_format": "Hand over fewer, smaller arrays per batch",
        "cpu_quota": "Raise the container's CPU quota, or move preprocessing off this host (tf.data service)",
        "static_batches": "Give tf.distribute batches of one shape: drop_remainder=True, or repeat()",
        "one_iterator": "Keep one iterator across epochs: each new one starts the pipeline again",
    }[kind]


# Titles that start from the user's own stage: "`map(decode_example)` runs on one core: ...".
_STAGE_TITLES = {
    "parallel_map": lambda s: f"`{s}` runs on one core: add num_parallel_calls=tf.data.AUTOTUNE",
    "interleave": lambda s: (f"`{s}` runs serially: add num_parallel_calls=tf.data.AUTOTUNE" if s.startswith("interleave")
                             else f"`{s}` reads its files one after another: read several at once"),
    "cache": lambda s: f"`{s}` redoes the same deterministic work every epoch: cache() after it",
    "vectorize_map": lambda s: f"`{s}` runs once per element: batch first, then map whole batches",
    "snapshot": lambda s: f"`{s}`'s output does not fit in memory: snapshot() it to disk",
    "shuffle_buffer": lambda s: f"`{s}` holds too much host memory: shuffle the file order, keep a smaller buffer",
    "decode_crop": lambda s: f"`{s}` keeps a crop of whole decoded JPEGs: decode only the crop window",
    "decode_reduced": lambda s: (f"`{s}` decodes whole JPEGs only to shrink them: decode at a reduced size "
                                 "(approximate: slightly different pixels)"),
    "static_batches": lambda s: (f"`{s}` may end with a partial batch, so tf.distribute checks every batch for "
                                 "one: drop_remainder=True, or repeat()"),
}


def size_text(nbytes) -> str:
    """`~1.0 GiB`, `~96 MiB`; empty when unknown."""
    return _size(nbytes)


def _size(nbytes) -> str:
    if nbytes is None:
        return ""
    return f"~{nbytes / 2**30:.1f} GiB" if nbytes >= 2**30 else f"~{nbytes / 2**20:.0f} MiB"


def _cpu_quota_code(details: dict) -> str:
    cores = details.get("cores_needed")
    want = f"{cores}" if cores else "N"
    lines = [
        f"# raise the container's CPU limit{f' to about {cores} cores' if cores else ''}:",
        f"#   docker run --cpus={want} ...",
        f"#   Kubernetes: resources: {{requests: {{cpu: \"{want}\"}}, limits: {{cpu: \"{want}\"}}}}",
        "# or move preprocessing off this host with tf.data service; measure it first:",
        f"#   {details.get('command') or 'pipediag scale data.py:make_dataset --workers 1,2,4'}",
    ]
    quota, seen = details.get("quota_cores"), details.get("tensorflow_cores")
    if quota and seen and seen > quota:
        # TensorFlow sizes tf.data's thread pool and AUTOTUNE's CPU budget by the cores it may be
        # scheduled on (sched_getaffinity), which a quota does not change.
        whole = max(1, math.ceil(quota - 1e-9))
        lines += [
            f"# until then, size tf.data to the quota, not to the {seen} cores TensorFlow sees:",
            "options = tf.data.Options()",
            f"options.autotune.cpu_budget = {whole}",
            f"options.threading.private_threadpool_size = {whole}",
            "ds = ds.with_options(options)",
        ]
    return "\n".join(lines)


def _shuffle_buffer_code(stage: str | None, details: dict) -> str:
    """A smaller buffer with its size estimate, and randomness from shuffling whole files (or
    blocks of indices) first, so that a small buffer still mixes examples from far apart."""
    size = details.get("suggested_elements") or "BUFFER"
    per = details.get("bytes_per_element")
    was = f"was {stage}" if stage else "was a larger buffer"
    if per is not None and details.get("elements") is not None:
        was += f": {_size(details['elements'] * per)} ({details['elements']} x {per / 2**10:.0f} KiB per element)"
    new = f"; {size} x {per / 2**10:.0f} KiB = {_size(size * per)}" if per is not None and isinstance(size, int) else ""
    return (
        "files = tf.data.Dataset.from_tensor_slices(filenames).shuffle(len(filenames))  # new order every epoch\n"
        "ds = files.interleave(tf.data.TFRecordDataset, cycle_length=8,  # mixes 8 files at a time\n"
        "                      num_parallel_calls=tf.data.AUTOTUNE)  # no files? shuffle blocks of indices alike\n"
        f"ds = ds.shuffle({size})  # {was}{new}"
    )


def _python_batches_code(stage: str | None, fn: str, size) -> str:
    """Per-element Python (a generator, a py_function map) rewritten to make a whole batch per
    call: TensorFlow ops over the batch dimension, which run without the GIL and in parallel."""
    if stage and stage.startswith("from_generator"):
        gen = f"{fn}()" if fn != "fn" else "the generator"
        return (
            f"# {gen} runs Python once per example; make a whole batch per call instead:\n"
            f"def make_batch(seed):  # TensorFlow ops on [{size}, ...] tensors (tf.random.stateless_*(..., seed=seed))\n"
            "    ...\n"
            "seeds = tf.data.Dataset.random(seed=0).batch(2)  # one seed pair per batch\n"
            "ds = seeds.map(make_batch, num_parallel_calls=tf.data.AUTOTUNE)\n"
            f"# or keep NumPy: have {gen} yield whole batches computed with vectorized NumPy"
        )
    return (
        f"ds = ds.batch({size}).map({fn}_in_tf_ops, num_parallel_calls=tf.data.AUTOTUNE)\n"
        f"# instead of .map({fn}).batch({size}): {fn}'s per-element Python rewritten as TensorFlow ops on a batch"
    )


def _tfds_decoders_code(stage: str | None, fn: str, details: dict) -> str:
    """tensorflow-datasets decodes every image whole in its own stage: skip that decode
    (tfds.decode.SkipDecoding) and decode only the window in the user's crop stage."""
    h, w = details.get("crop_size") or ("CROP_H", "CROP_W")
    feature = details.get("feature") or "image"
    where = f"in {fn} ({stage})" if stage else "in the crop function"
    return (
        f"ds = builder.as_dataset(split='train', decoders={{'{feature}': tfds.decode.SkipDecoding()}})  "
        "# or tfds.load(..., decoders=...)\n"
        f"# {where}, x['{feature}'] is now the JPEG's bytes: decode only the [{h}, {w}] crop window\n"
        f"shape = tf.image.extract_jpeg_shape(x['{feature}'])  # reads the header only\n"
        f"top = tf.random.uniform([], 0, shape[0] - {h} + 1, dtype=tf.int32)  # a random offset, as random_crop draws it\n"
        f"left = tf.random.uniform([], 0, shape[1] - {w} + 1, dtype=tf.int32)\n"
        f"image = tf.image.decode_and_crop_jpeg(x['{feature}'], tf.stack([top, left, {h}, {w}]), channels=3)\n"
        "# or keep the crop inside tfds: decoders={...: my_crop_decoder()} with @tfds.decode.make_decoder()"
    )


def _csv_batches_code(stage: str | None, details: dict) -> str:
    """TensorFlow's "Load CSV data" tutorial, "Performance": lines, batched, then one decode_csv
    per batch, with the user's own defaults and arguments and the stages between kept."""
    size = details.get("batch_size") or "BATCH_SIZE"
    skip = ".skip(1)" if details.get("header") else ""
    moves = "".join(_stage_call(label) for label in details.get("between") or ())
    kwargs = "".join(f", {k}={v!r}" for k, v in (details.get("decode_kwargs") or {}).items())
    defaults = details.get("record_defaults") or "column_defaults"
    caveat = details.get("quoted_newlines") or "check that no quoted field holds a newline"
    return (
        f"column_defaults = {defaults}  # one per column, as {stage or 'the CsvDataset'} parses them\n"
        "files = tf.data.Dataset.list_files(file_pattern)\n"
        f"lines = files.interleave(lambda f: tf.data.TextLineDataset(f){skip},"
        f"{'  # skip(1): the header line' if skip else ''}\n"
        "                         cycle_length=8, num_parallel_calls=tf.data.AUTOTUNE)\n"
        f"ds = lines{moves}.batch({size})  # the same shuffle/repeat as before, on lines\n"
        f"ds = ds.map(lambda x: tf.io.decode_csv(x, record_defaults=column_defaults{kwargs}),\n"
        "            num_parallel_calls=tf.data.AUTOTUNE)  # a tuple of columns; then your own map as before\n"
        "# (make_csv_dataset: dict(zip(column_names, columns)), the label popped)\n"
        f"# caveat: TextLineDataset ends a row at every newline, also inside quotes; here {caveat}"
    )


def _stage_call(label: str) -> str:
    """`shuffle(10000)` -> `.shuffle(10000)`; `repeat` -> `.repeat()`; prefetch and options left out."""
    if label.startswith(("prefetch", "options")):
        return ""
    return f".{label}" if "(" in label else f".{label}()"


def code(kind: str, stage: str | None, **details) -> str:
    fn = _fn(stage)
    if kind == "decode_crop":
        return _decode_crop_code(stage, fn, details)
    if kind in STEP_KINDS:
        return details.get("code") or step_code(kind, details.get("framework"))
    pipeline = _pipeline_code(kind, stage, fn, details)
    if pipeline is not None:
        return pipeline
    return _setting_code(kind, details)


def _pipeline_code(kind: str, stage: str | None, fn: str, details: dict[str, Any]) -> str | None:
    """The change to the pipeline's own code (prefetch, parallel map, interleave, cache, vectorize, snapshot,
    shuffle buffer, tf.data service); None for another kind."""
    if kind == "vectorize_map" and details.get("form") == "csv":
        return _csv_batches_code(stage, details)
    if kind == "prefetch":
        return "ds = ds.prefetch(tf.data.AUTOTUNE)  # last line of the pipeline"
    if kind == "static_batches":
        size = details.get("batch_size") or "BATCH_SIZE"
        return (f"ds = ds.batch({size}, drop_remainder=True)  # every batch one shape: no partial-batch check\n"
                f"# or: ds = ds.batch({size}).repeat(), and a known number of steps per epoch")
    if kind == "one_iterator":
        steps = details.get("steps_per_epoch")
        n = f"{steps:.0f}" if steps else "STEPS_PER_EPOCH"
        return (f"it = iter(ds.repeat())  # once, before the epochs\n"
                f"for epoch in range(EPOCHS):\n"
                f"    for _ in range({n}):  # the steps of one epoch\n"
                f"        batch = next(it)\n"
                f"# Keras: model.fit(ds.repeat(), steps_per_epoch={n}, epochs=EPOCHS)")
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
    if kind == "decode_reduced":
        return _decode_reduced_code(fn, details)
    if kind == "cache" and details.get("repeat_stage"):
        return (f"ds = ds.{stage or 'map(...)'}.cache().repeat()  # instead of .repeat().{stage or 'map(...)'}:\n"
                "# the data before the repeat is finite, so the map's work is done once; the same elements in order")
    if kind == "cache" and details.get("order_change"):
        return (f"ds = ds.{stage or 'map(...)'}.cache()  # in memory, before the element shuffle\n"
                f"# {details['order_change']}")
    if kind == "cache":
        return f"ds = ds.{stage or 'map(...)'}.cache()  # before the first random step; in memory"
    if kind == "vectorize_map" and details.get("python"):
        return _python_batches_code(stage, fn, details.get("batch_size") or "BATCH_SIZE")
    if kind == "vectorize_map":
        size = details.get("batch_size") or "batch_size"
        return (f"ds = ds.batch({size}).map({fn}, num_parallel_calls=tf.data.AUTOTUNE)\n"
                f"# instead of .map({fn}).batch({size}): {fn} now gets whole batches")
    if kind == "snapshot":
        size = _size(details.get("estimated_bytes"))
        note = f"{size} on disk, " if size else ""
        return f"ds = ds.{stage or 'map(...)'}.snapshot('/fast/disk/snapshot_dir')  # {note}written once, then read back"
    if kind == "shuffle_buffer":
        return _shuffle_buffer_code(stage, details)
    if kind == "tf_data_service":
        command = details.get("command") or "pipediag scale data.py:make_dataset --workers 1,2,4 --accelerators 1,8"
        return (
            "# measure first: how many workers it takes, and whether it is worth it\n"
            f"#   {command}\n"
            "ds = ds.apply(tf.data.experimental.service.distribute(\n"
            "    processing_mode='parallel_epochs', service='grpc://DISPATCHER:5000'))"
        )
    return None


def _decode_crop_code(stage: str | None, fn: str, details: dict[str, Any]) -> str:
    """Decoding only the crop's window: through tfds' decoders=, across two stages, from a sampled box, or in one map."""
    if details.get("tfds"):
        return _tfds_decoders_code(stage, fn, details)
    if details.get("decode_stage"):
        h, w = details.get("crop_size") or ("CROP_H", "CROP_W")
        decoder = _fn(details["decode_stage"], "the decoding function")
        return (
            f"# in {decoder} ({details['decode_stage']}): return the JPEG bytes instead of decode_jpeg(jpeg, channels=3)\n"
            f"# in {fn}: instead of cropping the decoded image to [{h}, {w}, 3], decode only that window\n"
            + _window_decode(h, w)
        )
    if details.get("sampled_box"):
        return _sampled_box_code(fn, details)
    h, w = details.get("crop_size") or ("CROP_H", "CROP_W")
    return (
        f"# in {fn}: instead of {details.get('decoder') or 'decode_jpeg'}(jpeg, channels=3) followed by "
        f"random_crop(image, [{h}, {w}, 3])\n"
        + _window_decode(h, w)
    )


def _window_decode(h: Any, w: Any) -> str:
    """Reading the JPEG's header, drawing a random offset as random_crop does, and decoding only that window."""
    return (
        "shape = tf.image.extract_jpeg_shape(jpeg)  # reads the header only\n"
        f"top = tf.random.uniform([], 0, shape[0] - {h} + 1, dtype=tf.int32)  # a random offset, as random_crop draws it\n"
        f"left = tf.random.uniform([], 0, shape[1] - {w} + 1, dtype=tf.int32)\n"
        f"image = tf.image.decode_and_crop_jpeg(jpeg, tf.stack([top, left, {h}, {w}]), channels=3)"
    )


def _setting_code(kind: str, details: dict[str, Any]) -> str:
    """The batch's format or size, memory growth, the CPU quota, tf.data's threads; ValueError for an unknown kind."""
    if kind == "batch_format":
        return (
            "# one packed array instead of one per feature; uint8/bfloat16 over the wire, cast on the device\n"
            "ds = ds.map(lambda f: (tf.concat([f[k] for k in KEYS], -1), f['label']))"
        )
    if kind == "batch_size":
        return details.get("code", "ds = ds.batch(BATCH_SIZE)  # see the title for the direction")
    if kind == "memory_growth":
        return (
            "for gpu in tf.config.list_physical_devices('GPU'):\n"
            "    tf.config.experimental.set_memory_growth(gpu, True)  # before any GPU work"
        )
    if kind == "cpu_quota":
        return _cpu_quota_code(details)
    if kind == "threading":
        size = details.get("private_threadpool_size", 32)
        return (
            "options = tf.data.Options()\n"
            f"options.threading.private_threadpool_size = {size}\n"
            "ds = ds.with_options(options)"
        )
    raise ValueError(f"unknown fix kind {kind!r}")


def _decode_reduced_code(fn: str, details: dict[str, Any]) -> str:
    """decode_jpeg at the largest ratio that still leaves the resize's size, picked from the header."""
    height, width = details.get("size") or ("H", "W")
    return (
        f"# in {fn}: instead of tf.io.decode_jpeg(jpeg, channels=3)\n"
        f"# before tf.image.resize(image, [{height}, {width}]):\n"
        "hw = tf.image.extract_jpeg_shape(jpeg)  # the header only\n"
        f"reach = tf.minimum(hw[0] // {height}, hw[1] // {width})  # the shrink\n"
        "image = tf.case(\n"
        "    [(reach >= r, lambda r=r: tf.io.decode_jpeg(\n"
        "        jpeg, channels=3, ratio=r)) for r in (8, 4, 2)],\n"
        "    default=lambda: tf.io.decode_jpeg(jpeg, channels=3),\n"
        "    exclusive=False)\n"
        "# or ratio=2 when every image is at least twice the size.\n"
        "# Approximate: the decoder's downscale averages where a\n"
        "# bilinear resize samples: pixels differ slightly"
    )
