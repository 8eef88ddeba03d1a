"""`tfds:NAME` targets: a tensorflow-datasets dataset the user already has on disk.

`tfds:mnist`, `tfds:my_dataset/config:1.0.0` — read from `--data-dir` (default: tfds' own,
`$TFDS_DATA_DIR` or `~/tensorflow_datasets`) with tfds' own API, never downloaded or prepared:
a dataset that is not there is a UsageError that says how to prepare it. Datasets built by a
user's own builder class are found through the files in the data dir, like tfds itself does.

The builder returned takes `batch_size` like any user builder; elements are `(x, y)` tuples when
the dataset declares supervised keys (what Keras models and the stand-in expect), else its dicts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pipediag.errors import UsageError

PREFIX = "tfds:"
DEFAULT_SPLIT = "train"
DEFAULT_BATCH_SIZE = 32


def is_tfds_target(text: str | None) -> bool:
    return bool(text) and text.startswith(PREFIX)


def dataset_name(text: str) -> str:
    name = text[len(PREFIX):]
    if not name or any(c.isspace() for c in name):
        raise UsageError(f"'{text}' names no dataset", "write tfds:NAME, e.g. tfds:mnist or tfds:NAME/CONFIG:VERSION")
    return name


def prepared_here(data_dir: str) -> list[str]:
    """Datasets prepared under data_dir: folders NAME/[CONFIG/]VERSION holding dataset_info.json."""
    found = set()
    if not os.path.isdir(data_dir):
        return []
    for root, _dirs, files in os.walk(data_dir):
        depth = os.path.relpath(root, data_dir).count(os.sep)
        if depth > 2:
            continue
        if "dataset_info.json" in files:
            found.add(os.path.relpath(root, data_dir).split(os.sep)[0])
    return sorted(found)


def _not_prepared_hint(name: str, data_dir: str) -> str:
    here = prepared_here(data_dir)
    listing = f"datasets prepared there: {', '.join(here)}" if here else "no prepared datasets there"
    return (f"{listing}. pipediag never downloads or prepares data: prepare it first "
            f"(`tfds build {name.split('/')[0].split(':')[0]} --data_dir {data_dir}`, or your builder's "
            "download_and_prepare()), or pass --data-dir where it is")


def load(text: str, data_dir: str | None = None, split: str | None = None) -> Callable[..., Any]:
    """The dataset builder for a `tfds:NAME` target. Checks now that the data is on disk."""
    from pipediag.backends.tfds import tfds

    name = dataset_name(text)
    split = split or DEFAULT_SPLIT
    if data_dir is not None and not os.path.isdir(data_dir):
        raise UsageError(f"--data-dir {data_dir} is not a folder", "give the folder tfds prepared the dataset in")
    where = os.path.expanduser(data_dir) if data_dir else tfds.core.constants.DATA_DIR
    try:
        builder = tfds.builder(name, data_dir=where)
    except tfds.core.registered.DatasetNotFoundError:
        raise UsageError(f"no tfds dataset '{name}' is known or prepared in {where}",
                         _not_prepared_hint(name, where)) from None
    except ValueError as error:  # a bad config or version string
        raise UsageError(f"tfds could not open '{name}': {error}", _not_prepared_hint(name, where)) from None
    if not builder.is_prepared():
        raise UsageError(f"tfds dataset '{name}' is not prepared in {where}", _not_prepared_hint(name, where))
    splits = list(builder.info.splits.keys())
    base_split = split.split("[")[0].split("+")[0]
    if base_split not in splits:
        raise UsageError(f"tfds dataset '{name}' has no split '{split}'", f"its splits: {', '.join(splits)}")
    supervised = builder.info.supervised_keys is not None

    def make_dataset(batch_size: int = DEFAULT_BATCH_SIZE):
        ds = builder.as_dataset(split=split, as_supervised=supervised, shuffle_files=False)
        _require_batchable(ds.element_spec, name)
        return ds.batch(batch_size)

    make_dataset.__name__ = f"tfds_{builder.name}"
    make_dataset.__doc__ = f"tfds.builder({name!r}).as_dataset(split={split!r}) from {where}, batched"
    return make_dataset


def _require_batchable(element_spec, name: str) -> None:
    from pipediag.backends.tf import tf

    for spec in tf.nest.flatten(element_spec):
        shape = getattr(spec, "shape", None)
        if shape is not None and shape.rank is not None and None in shape.as_list():
            raise UsageError(
                f"tfds dataset '{name}' has elements of varying shape ({shape}): they cannot be batched as they are",
                "write a builder of your own (file.py:function) that loads it with tfds.load, resizes or pads, "
                "and batches it; then diagnose that",
            )
