"""A stand-in model for when the user gives neither --model nor --step.

It is matched to what the batch holds: a small CNN for each image-like tensor (rank 4:
batch, height, width, channels; any height and width), a small MLP for other numeric tensors (a
batch of scalars is one feature per example), an MLP on each row's value count and mean for ragged
and sparse tensors and for tensors whose shape changes from batch to batch, and a head for the
labels (classification for integer labels, regression for float ones, none when there are no
labels). Strings are ignored; a batch with nothing numeric is a UsageError saying what to pass.
It trains for real (forward, loss, gradients, SGD update) so the step costs what a small model
costs. The report says plainly that a stand-in was used, and which.
"""

from __future__ import annotations

import ast
from typing import Any

from pipediag.backends.tf import keras, tf
from pipediag.errors import UsageError
from pipediag.records.step import StepInfo
from pipediag.steps.step import Step

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


def _is_number(dtype: Any) -> bool:
    return bool(dtype.is_floating or dtype.is_integer or dtype.is_bool)


def _kind(tensor: Any, spec: Any) -> str | None:
    """How the stand-in reads a leaf: `dense` (a fixed shape it can put weights on), `image`
    (rank 4, any height and width), `summary` (ragged, sparse, or a shape that changes from batch
    to batch: read as each row's value count and mean), or None (strings and other non-numbers)."""
    if isinstance(tensor, (tf.RaggedTensor, tf.SparseTensor)):
        return "summary" if _is_number(tensor.dtype) and tensor.shape.rank and tensor.shape.rank >= 2 else None
    if not isinstance(tensor, tf.Tensor) or not _is_number(tensor.dtype) or tensor.shape.rank in (None, 0):
        return None
    shape = getattr(spec, "shape", None)
    inner = tensor.shape[1:] if shape is None or shape.rank != tensor.shape.rank else shape[1:]
    if tensor.shape.rank == 4 and inner[-1] is not None:
        return "image"  # convolutions and global pooling take any height and width
    return "dense" if inner.is_fully_defined() else "summary"


def _describe_leaf(path: str, tensor: Any) -> str:
    kind = {tf.RaggedTensor: "ragged ", tf.SparseTensor: "sparse "}.get(type(tensor), "")
    dtype = getattr(getattr(tensor, "dtype", None), "name", type(tensor).__name__)
    return f"{path}: {kind}{dtype}"


class _StandIn:
    def __init__(self, first_batch: Any, element_spec: Any = None):
        x, y, y_path = _split_x_y(first_batch)
        spec_x, spec_y = (None, None)
        if element_spec is not None:
            spec_x, spec_y, _ = _split_x_y(element_spec)
        leaves = _numeric_leaves(x)
        specs = dict(_numeric_leaves(spec_x)) if spec_x is not None else {}
        self.kinds = {path: _kind(t, specs.get(path)) for path, t in leaves}
        self.paths = [path for path, _ in leaves if self.kinds[path]]
        self.ignored = [path for path, _ in leaves if not self.kinds[path]]
        if not self.paths:
            raise UsageError(
                "the batch has no numeric tensor a stand-in model could train on ("
                + "; ".join(_describe_leaf(path, t) for path, t in leaves) + ")",
                "pass --model (a compiled Keras model that reads these inputs, e.g. with a TextVectorization "
                "layer) or --step (your own step function); or turn the inputs into numbers in the pipeline",
            )
        self._getters = {path: t for path, t in leaves}
        inputs, features, parts = [], [], []
        for path in self.paths:
            t, kind = self._getters[path], self.kinds[path]
            if kind == "image":
                spec = keras.Input(shape=(None, None, int(t.shape[-1])), dtype="float32")
                h = keras.layers.Conv2D(16, 3, strides=2, activation="relu")(spec)
                h = keras.layers.Conv2D(32, 3, strides=2, activation="relu")(h)
                features.append(keras.layers.GlobalAveragePooling2D()(h))
                parts.append(f"a 2-layer CNN on {path} {tuple(t.shape[1:])}")
            elif kind == "summary":
                spec = keras.Input(shape=(2,), dtype="float32")
                features.append(keras.layers.Dense(64, activation="relu")(spec))
                parts.append(f"an MLP layer on the value count and mean of each row of {path}")
            else:
                # A batch of scalars (rank 1) is read as one feature per example.
                spec = keras.Input(shape=tuple(t.shape[1:]) or (1,), dtype="float32")
                h = keras.layers.Flatten()(spec) if t.shape.rank > 2 else spec
                features.append(keras.layers.Dense(64, activation="relu")(h))
                shape = tuple(t.shape[1:])
                parts.append(f"an MLP layer on {path} " + (str(shape) if shape else "(one number per example)"))
            inputs.append(spec)
        h = features[0] if len(features) == 1 else keras.layers.Concatenate()(features)
        h = keras.layers.Dense(64, activation="relu")(h)

        self.head, out_units, self.y_reduce = self._head(y, spec_y)
        outputs = keras.layers.Dense(out_units)(h)
        self.model = keras.Model(inputs, outputs, name="pipediag_standin")
        self.optimizer = keras.optimizers.SGD(learning_rate=1e-3)
        self.y_path = y_path
        self.description = (
            f"stand-in model ({' + '.join(parts)}, {self.model.count_params():,} parameters, "
            f"{self.head} loss) — no --model or --step was given"
        )
        if self.ignored:
            self.description += f"; ignored non-numeric inputs: {', '.join(self.ignored)}"
        # With the dataset's spec, one trace fits every batch (sparse and ragged batches would
        # otherwise be traced again as their sizes change).
        # A spec of unknown rank (a py_function's output without set_shape) would trace the step
        # for any rank: then the first batches' own shapes are traced instead.
        signature = None if element_spec is None or _unknown_rank(element_spec) else [element_spec]
        self._train = tf.function(self._train_step, input_signature=signature, reduce_retracing=True)

    def _head(self, y: Any, spec_y: Any = None) -> tuple[str, int, bool]:
        if not isinstance(y, tf.Tensor) or not (y.dtype.is_integer or y.dtype.is_floating):
            return "no labels: mean-square of the output", 1, False
        if y.dtype.is_integer and y.shape.rank == 1:
            self.classes = max(2, int(tf.reduce_max(y).numpy()) + 1)
            return f"sparse cross-entropy over {self.classes} classes", self.classes, False
        shape = getattr(spec_y, "shape", None)
        varies = shape is not None and shape.rank == y.shape.rank and not shape[1:].is_fully_defined()
        width = int(tf.reduce_prod(y.shape[1:]).numpy()) if y.shape.rank > 1 else 1
        if varies:
            return "mean-square on the label's mean (its shape changes from batch to batch)", 1, True
        if width > _MAX_OUTPUTS:
            return "mean-square on the label's mean (labels too wide to predict whole)", 1, True
        return "mean-square regression", width, False

    def _features(self, x: Any) -> list[Any]:
        out = []
        for path in self.paths:
            t = x
            for key in _parse_path(path):
                t = t[key]
            if self.kinds[path] == "summary":
                out.append(_row_summary(t))
                continue
            scaled = tf.cast(t, tf.float32)
            if self._getters[path].dtype == tf.uint8:
                scaled = scaled / 255.0
            out.append(scaled if scaled.shape.rank > 1 else tf.expand_dims(scaled, -1))
        return out

    def _train_step(self, batch: Any) -> Any:
        x, y, _ = _split_x_y(batch)
        with tf.GradientTape() as tape:
            out = self.model(self._features(x), training=True)
            if self.head.startswith("sparse"):
                loss = tf.reduce_mean(
                    keras.losses.sparse_categorical_crossentropy(self._class_ids(y), out, from_logits=True)
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

    def _class_ids(self, y: Any) -> Any:
        # The first batch need not hold the largest class: a later label beyond the head (or a
        # negative one) would make the loss op fail on CPU. Folding it into range costs the same.
        return tf.math.floormod(tf.cast(y, tf.int64), self.classes)

    def run(self, batch: Any) -> Any:
        return self._train(batch).numpy()  # .numpy() waits for the step to finish


def _row_summary(t: Any) -> Any:
    """Each row's value count and mean, shape (batch, 2): what the stand-in reads from a ragged or
    sparse tensor, or one whose shape changes from batch to batch, so its weights fit every batch."""
    if isinstance(t, tf.SparseTensor):
        rows = tf.cast(t.dense_shape[0], tf.int32)
        row_ids = tf.cast(t.indices[:, 0], tf.int32)
        count = tf.math.unsorted_segment_sum(tf.ones_like(row_ids, tf.float32), row_ids, rows)
        total = tf.math.unsorted_segment_sum(tf.cast(t.values, tf.float32), row_ids, rows)
    elif isinstance(t, tf.RaggedTensor):
        flat = t.merge_dims(1, -1) if t.shape.rank > 2 else t
        flat = tf.cast(flat, tf.float32)
        count = tf.cast(flat.row_lengths(), tf.float32)
        total = tf.reduce_sum(flat, axis=1)
    else:
        flat = tf.reshape(tf.cast(t, tf.float32), [tf.shape(t)[0], -1])
        count = tf.cast(tf.fill([tf.shape(t)[0]], tf.shape(flat)[1]), tf.float32)
        total = tf.reduce_sum(flat, axis=1)
    return tf.stack([count, total / tf.maximum(count, 1.0)], axis=1)


def _parse_path(path: str) -> list[Any]:
    """`[0]['image']` -> [0, 'image']; `x` (the batch itself) -> []."""
    if not path.startswith("["):
        return []
    return [ast.literal_eval(part) for part in path[1:-1].split("][")]


def standin_step(first_batch: Any, element_spec: Any = None) -> Step:
    """A stand-in fitted to `first_batch`. `element_spec` (the dataset's) says which dimensions
    change from batch to batch (padded_batch, variable image sizes); without it the first batch's
    shapes are taken as fixed."""
    standin = _StandIn(first_batch, element_spec)
    return Step(run=standin.run, info=StepInfo(kind="standin", description=standin.description))


def _unknown_rank(element_spec: Any) -> bool:
    """Whether any part of the dataset's spec has a shape of unknown rank."""
    return any(getattr(getattr(spec, "shape", None), "rank", 0) is None
               for spec in tf.nest.flatten(element_spec, expand_composites=False))
