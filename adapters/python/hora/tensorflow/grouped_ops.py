"""Horovod's grouped_allgather and grouped_reducescatter: one collective per tensor of a list,
all enqueued together.

Each member is hora's asynchronous allgather or reducescatter op, named ``<name>.<i>``.
Inside a tf.function the members are independent ops, so TensorFlow's executor starts them
together and the engine negotiates them in the same cycles. Eagerly the list goes through one
tf.function (traced once per name, number of members, dtypes and ranks of their shapes) run
once, so that the members are in flight together there too (Horovod's ``_make_subgraph``).
Unnamed members then take their node names in that function, the same on every rank; as for
any unnamed eager collective, every rank must make the calls in the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
from tensorflow.types.experimental import TensorLike

from hora._internal.reduce_ops import ReduceOp
from hora._internal.tensorflow import run
from hora.compression import Compression, Compressor
from hora.process_sets import ProcessSet, global_process_set
from hora.tensorflow import mpi_ops


def _each(
    collective: Callable[..., tf.Tensor], tensors: list[tf.Tensor], name: str | None, **options: Any
) -> list[tf.Tensor]:
    """``collective`` on every member, named ``<name>.<i>`` (unnamed: by node)."""
    return [
        collective(
            t, name=None if name is None else f"{name}.{i}", ignore_name_scope=True, **options
        )
        for i, t in enumerate(tensors)
    ]


@tf.function(reduce_retracing=True)
def _each_in_one_graph(
    collective: Callable[..., tf.Tensor],
    tensors: list[tf.Tensor],
    name: str | None,
    options: dict[str, Any],
) -> list[tf.Tensor]:
    return _each(collective, tensors, name, **options)


def _grouped(
    collective: Callable[..., tf.Tensor],
    tensors: Sequence[TensorLike],
    name: str | None,
    ignore_name_scope: bool,
    **options: Any,
) -> list[tf.Tensor]:
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if not tensors:
        return []
    if not tf.executing_eagerly():
        if name is not None and not ignore_name_scope:
            scope = tf.compat.v1.get_default_graph().get_name_scope()
            name = f"{scope}/{name}" if scope else name
        return _each(collective, tensors, name, **options)
    return list(run(_each_in_one_graph, collective, tensors, name, options))


def grouped_allgather(
    tensors: Sequence[TensorLike],
    name: str | None = None,
    ignore_name_scope: bool = False,
    process_set: ProcessSet = global_process_set,
) -> list[tf.Tensor]:
    """allgather over the set's ranks of every tensor of the list (each concatenated along its
    first dimension, which may differ between ranks), enqueued together; returns the list."""
    return _grouped(mpi_ops.allgather, tensors, name, ignore_name_scope, process_set=process_set)


def grouped_reducescatter(
    tensors: Sequence[TensorLike],
    device_dense: str = "",
    compression: Compressor | None = Compression.none,
    op: ReduceOp | None = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
    ignore_name_scope: bool = False,
    **reducescatter_options: Any,
) -> list[tf.Tensor]:
    """reducescatter over the set's ranks of every tensor of the list (this rank's block of
    each reduction along the first dimension; op Average by default), enqueued together;
    returns the list.
    ``reducescatter_options`` go to every member's hora.tensorflow.reducescatter."""
    return _grouped(
        mpi_ops.reducescatter,
        tensors,
        name,
        ignore_name_scope,
        compression=compression,
        op=op,
        process_set=process_set,
        **reducescatter_options,
    )


__all__ = ["grouped_allgather", "grouped_reducescatter"]
