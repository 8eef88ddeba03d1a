"""A stand-in model for when the user gives neither --model nor --step.

It is matched to what the batch holds: a small CNN for each image-like tensor (rank 4:
batch, height, width, channels), a small MLP for other numeric tensors, and a head for the labels
(classification for integer labels, regression for float ones, none when there are no labels).
It trains for real (forward, loss, gradients, SGD update) so the step costs what a small model
costs. The report says plainly that a stand-in was used, and which.
"""

from __future__ import annotations

import ast
from typing import Any

from pipediag.backends.tf import keras, tf
from pipediag.errors import UsageError
from pipediag.steps.step import Step, StepInfo

_LABEL_KEYS = ("label", "labels", "target", "targets", "y")
_MAX_OUTPUTS = 4096


def _split_x_y(batch: Any) -> tuple[Any, Any, str]:
    """Keras' convention: (x, y) or (x, y, sample_weight); a dict may carry its label by name."""
    if isinstance(batch, (tuple, list)) and len(batch) in (2, 3):
        return batch[0], batch[1], "[1]"
    if isinstance(batch, (tuple, list)) and len(batch) == 1:
        return batch[0], None, ""
    if isinstance(batch, dict):
        for key in _LABEL_KEYS:
            if key in batch:
                return {k: v for k, v in batch.items() if k != key}, batch[key], repr(key)
    return batch, None, ""


def _numeric_leaves(x: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in _numeric_leaves(x[k], f"{prefix}[{k!r}]")]
    if isinstance(x, (tuple, list)):
        return [leaf for i, v in enumerate(x) for leaf in _numeric_leaves(v, f"{prefix}[{i}]")]
    return [(prefix or "x", x)]


def _usable(tensor: Any) -> bool:
    return (
        isinstance(tensor, tf.Tensor)
        and (tensor.dtype.is_floating or tensor.dtype.is_integer or tensor.dtype.is_bool)
        and tensor.shape.rank is not None
        and tensor.shape.rank >= 1
    )


class _StandIn:
    def __init__(self, first_batch: Any):
        x, y, y_path = _split_x_y(first_batch)
        leaves = _numeric_leaves(x)
        self.paths = [path for path, t in leaves if _usable(t)]
        self.ignored = [path for path, t in leaves if not _usable(t)]
        if not self.paths:
            raise UsageError(
                "the batch has no dense numeric tensor a stand-in model could train on",
                "pass --model (a compiled Keras model) or --step (your own step function)",
            )
        self._getters = {path: t for path, t in leaves}
        inputs, features, parts = [], [], []
        for path in self.paths:
            t = self._getters[path]
            spec = keras.Input(shape=tuple(t.shape[1:]), dtype="float32")
            inputs.append(spec)
            if t.shape.rank == 4:
                h = keras.layers.Conv2D(16, 3, strides=2, activation="relu")(spec)
                h = keras.layers.Conv2D(32, 3, strides=2, activation="relu")(h)
                features.append(keras.layers.GlobalAveragePooling2D()(h))
                parts.append(f"a 2-layer CNN on {path} {tuple(t.shape[1:])}")
            else:
                h = keras.layers.Flatten()(spec) if t.shape.rank > 2 else spec
                features.append(keras.layers.Dense(64, activation="relu")(h))
                parts.append(f"an MLP layer on {path} {tuple(t.shape[1:])}")
        h = features[0] if len(features) == 1 else keras.layers.Concatenate()(features)
        h = keras.layers.Dense(64, activation="relu")(h)

        self.head, out_units, self.y_reduce = self._head(y)
        outputs = keras.layers.Dense(out_units)(h)
        self.model = keras.Model(inputs, outputs, name="pipediag_standin")
        self.optimizer = keras.optimizers.SGD(learning_rate=1e-3)
        self.y_path = y_path
        self.description = (
            f"stand-in model ({' + '.join(parts)}, {self.model.count_params():,} parameters, "
            f"{self.head} loss) — no --model or --step was given"
        )
        if self.ignored:
            self.description += f"; ignored non-numeric or ragged inputs: {', '.join(self.ignored)}"
        self._train = tf.function(self._train_step, reduce_retracing=True)

    def _head(self, y: Any) -> tuple[str, int, bool]:
        if not isinstance(y, tf.Tensor) or not (y.dtype.is_integer or y.dtype.is_floating):
            return "no labels: mean-square of the output", 1, False
        if y.dtype.is_integer and y.shape.rank == 1:
            self.classes = max(2, int(tf.reduce_max(y).numpy()) + 1)
            return f"sparse cross-entropy over {self.classes} classes", self.classes, False
        width = int(tf.reduce_prod(y.shape[1:]).numpy()) if y.shape.rank > 1 else 1
        if width > _MAX_OUTPUTS:
            return "mean-square on the label's mean (labels too wide to predict whole)", 1, True
        return "mean-square regression", width, False

    def _features(self, x: Any) -> list[Any]:
        out = []
        for path in self.paths:
            t = x
            for key in _parse_path(path):
                t = t[key]
            t = tf.cast(t, tf.float32)
            if t.dtype == tf.float32 and self._getters[path].dtype == tf.uint8:
                t = t / 255.0
            out.append(t if t.shape.rank > 1 else tf.expand_dims(t, -1))
        return out

    def _train_step(self, batch: Any) -> Any:
        x, y, _ = _split_x_y(batch)
        with tf.GradientTape() as tape:
            out = self.model(self._features(x), training=True)
            if self.head.startswith("sparse"):
                loss = tf.reduce_mean(
                    keras.losses.sparse_categorical_crossentropy(tf.cast(y, tf.int64), out, from_logits=True)
                )
            elif self.head.startswith("no labels"):
                loss = tf.reduce_mean(tf.square(out))
            else:
                target = tf.cast(y, tf.float32)
                if self.y_reduce:
                    target = tf.reduce_mean(tf.reshape(target, [tf.shape(target)[0], -1]), axis=1, keepdims=True)
                loss = tf.reduce_mean(tf.square(out - tf.reshape(target, tf.shape(out))))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def run(self, batch: Any) -> Any:
        return self._train(batch).numpy()  # .numpy() waits for the step to finish


def _parse_path(path: str) -> list[Any]:
    """`[0]['image']` -> [0, 'image']; `x` (the batch itself) -> []."""
    if not path.startswith("["):
        return []
    return [ast.literal_eval(part) for part in path[1:-1].split("][")]


def standin_step(first_batch: Any) -> Step:
    standin = _StandIn(first_batch)
    return Step(run=standin.run, info=StepInfo(kind="standin", description=standin.description))
