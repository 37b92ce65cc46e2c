"""SyncBatchNormalization (horovod.tensorflow.SyncBatchNormalization): Keras's
BatchNormalization whose batch statistics, in training, are those of every rank's batch
together (every rank of ``process_set``, the global set by default), as one process would
compute them over the concatenated batch.

Each rank sums its rows' count, sum and sum of squares over the reduction axes; one grouped
allreduce (Sum) adds them up over the ranks; mean = sum / count and variance = sum of squares
/ count - mean**2 (Horovod's one-round form). The allreduce's registered gradient sums the
statistics' upstream gradients over the ranks, so the gradients of every rank's inputs are
those of the concatenated batch. Outside training (and in a set of one rank) it is
BatchNormalization.

The layer is of the Keras generation tf.keras resolves to (hora/_internal/keras.py): Keras 3
overrides ``_moments``, tf_keras ``_calculate_mean_and_var`` (and is never fused, as Horovod's).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from hora._internal.keras import LEGACY, keras
from hora._internal.reduce_ops import Sum
from hora.process_sets import ProcessSet, global_process_set, set_id
from hora.tensorflow import mpi_ops


def global_moments(
    inputs: tf.Tensor,
    axes: list[int],
    keepdims: bool,
    weights: tf.Tensor | None = None,
    process_set: ProcessSet = global_process_set,
) -> tuple[tf.Tensor, tf.Tensor]:
    """(mean, variance) of ``inputs`` over ``axes`` and over the set's ranks' inputs;
    ``weights`` (broadcastable to inputs: a mask) weigh each element, as
    tf.nn.weighted_moments does."""
    dtype = inputs.dtype
    x = tf.cast(inputs, tf.float32) if dtype in (tf.float16, tf.bfloat16) else inputs
    if weights is None:
        w = tf.ones_like(x)
    else:
        w = tf.broadcast_to(tf.cast(weights, x.dtype), tf.shape(x))
    count = tf.reduce_sum(w, axes, keepdims=keepdims)
    total = tf.reduce_sum(w * x, axes, keepdims=keepdims)
    squares = tf.reduce_sum(w * tf.square(x), axes, keepdims=keepdims)
    count, total, squares = mpi_ops.grouped_allreduce(
        [count, total, squares], op=Sum, process_set=process_set
    )
    mean = total / count
    variance = tf.maximum(squares / count - tf.square(mean), 0.0)
    return tf.cast(mean, dtype), tf.cast(variance, dtype)


class _OnProcessSet:
    """The set whose ranks' statistics the layer combines (a plain attribute: a ProcessSet
    is not a Keras config value, so a loaded layer uses the global set)."""

    _hora_process_set: ProcessSet = global_process_set

    def _hora_set(self, process_set: ProcessSet) -> None:
        set_id(process_set)  # a ValueError now for an unregistered set
        self._hora_process_set = process_set

    def _hora_alone(self) -> bool:
        return (self._hora_process_set.size() or 1) == 1


class _SyncBatchNormalization3(_OnProcessSet, keras.layers.BatchNormalization):
    """Keras 3's BatchNormalization, its training statistics global (module docstring)."""

    def __init__(
        self, *args: Any, process_set: ProcessSet = global_process_set, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._hora_set(process_set)

    def _moments(self, inputs: Any, mask: Any) -> tuple[tf.Tensor, tf.Tensor]:
        if self._hora_alone():
            return super()._moments(inputs, mask)
        weights = None if mask is None else tf.expand_dims(mask, axis=-1)
        axes = list(self._reduction_axes)
        return global_moments(inputs, axes, False, weights, self._hora_process_set)


class _SyncBatchNormalization2(_OnProcessSet, keras.layers.BatchNormalization):
    """tf_keras's BatchNormalization, its training statistics global (module docstring)."""

    def __init__(
        self,
        *args: Any,
        fused: bool | None = False,
        process_set: ProcessSet = global_process_set,
        **kwargs: Any,
    ) -> None:
        if fused:
            raise ValueError("SyncBatchNormalization cannot be fused (fused=True)")
        super().__init__(*args, fused=False, **kwargs)
        self._hora_set(process_set)

    def _calculate_mean_and_var(
        self, inputs: Any, reduction_axes: Any, keep_dims: bool, mask: Any = None
    ) -> tuple[tf.Tensor, tf.Tensor]:
        if self._hora_alone():
            return super()._calculate_mean_and_var(inputs, reduction_axes, keep_dims, mask)
        weights = None if mask is None else tf.expand_dims(mask, axis=-1)
        axes = list(reduction_axes)
        return global_moments(inputs, axes, keep_dims, weights, self._hora_process_set)


_Base = _SyncBatchNormalization2 if LEGACY else _SyncBatchNormalization3


class SyncBatchNormalization(_Base):
    """BatchNormalization (same arguments, plus ``process_set=``) whose statistics in
    training are computed over the batches of every rank of ``process_set`` together (an
    allreduce per call; the global set by default), as one process would over the
    concatenated batch; inference uses the moving statistics, as BatchNormalization does.
    Every member must call it the same number of times in the same order. Not under XLA."""


__all__ = ["SyncBatchNormalization"]
