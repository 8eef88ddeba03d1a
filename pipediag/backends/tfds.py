"""tensorflow-datasets, imported once, only for `tfds:NAME` targets. A missing installation is a
UsageError with the install command as its hint."""

from __future__ import annotations

from pipediag.backends.tf import tf  # noqa: F401  (TensorFlow first, with its log filtering)
from pipediag.errors import UsageError

try:
    import tensorflow_datasets as tfds
except ImportError as error:  # pragma: no cover - depends on the installation
    raise UsageError(
        f"tfds: targets need tensorflow-datasets, which is not installed ({error})",
        "pip install 'pipediag[tfds]'  (or: pip install tensorflow-datasets)",
    ) from error

__all__ = ["tfds"]
