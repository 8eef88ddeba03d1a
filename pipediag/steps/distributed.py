"""A step on several devices through a tf.distribute strategy: its strategy, its replicas, a batch split per replica."""

from __future__ import annotations

from typing import Any

from pipediag.backends.tf import tf


def strategy_of(model_or_step: Any) -> Any | None:
    """The strategy of a model built under a scope, or the one a step function carries, when it has
    more than one replica; None otherwise (the default strategy has one)."""
    strategy = getattr(model_or_step, "distribute_strategy", None)
    if strategy is None or not isinstance(strategy, tf.distribute.Strategy):
        return None
    return strategy if strategy.num_replicas_in_sync > 1 else None


def replica_devices(strategy: Any) -> tuple[str, ...]:
    """The strategy's replica devices as steps.placement names them ("gpu:0", "cpu:1")."""
    from pipediag.steps.placement import in_order

    out = []
    for name in strategy.extended.worker_devices:
        spec = tf.DeviceSpec.from_string(name)
        kind = (spec.device_type or "CPU").lower()
        out.append(f"{'gpu' if kind == 'gpu' else kind}:{spec.device_index or 0}")
    return in_order(out)


def is_distributed(batch: Any) -> bool:
    """Whether a batch already holds per-replica values."""
    return any(isinstance(leaf, tf.distribute.DistributedValues) for leaf in tf.nest.flatten(batch))


def _slice_sizes(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if k < total % parts else 0) for k in range(parts)]


def split_batch(batch: Any, strategy: Any) -> Any:
    """A plain global batch as per-replica values: replica k gets the k-th slice (sizes differing by
    at most one, as the distributed dataset's rebatch gives them)."""
    replicas = strategy.num_replicas_in_sync
    leaves = tf.nest.flatten(batch)
    total = int(leaves[0].shape[0])
    sizes = _slice_sizes(total, replicas)
    starts = [sum(sizes[:k]) for k in range(replicas)]

    def slice_for(context) -> Any:
        k = context.replica_id_in_sync_group
        return tf.nest.map_structure(lambda t: t[starts[k]:starts[k] + sizes[k]], batch)

    return strategy.experimental_distribute_values_from_function(slice_for)
