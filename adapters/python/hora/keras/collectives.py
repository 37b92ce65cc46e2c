"""horovod.keras's collectives, with its signatures: a tensor-compatible value first, then
``name`` (hora.tensorflow's take ``average`` or ``root_rank`` second). Each returns the
result tensor (eagerly; inside a tf.function the symbolic tensor), as Horovod's do under
TensorFlow 2."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from hora._internal.reduce_ops import ReduceOp
from hora.compression import Compression, Compressor
from hora.process_sets import ProcessSet, global_process_set
from hora.tensorflow import mpi_ops


def allreduce(
    value: Any,
    name: str | None = None,
    average: bool | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    op: ReduceOp | None = None,
    compression: Compressor | None = Compression.none,
    process_set: ProcessSet = global_process_set,
) -> tf.Tensor:
    """``postscale * op(prescale * value)`` over the set's ranks (Average by default)."""
    return mpi_ops.allreduce(
        tf.convert_to_tensor(value),
        average=average,
        compression=compression,
        op=op,
        prescale_factor=prescale_factor,
        postscale_factor=postscale_factor,
        name=name,
        process_set=process_set,
    )


def allgather(
    value: Any, name: str | None = None, process_set: ProcessSet = global_process_set
) -> tf.Tensor:
    """Every set member's value concatenated along the first dimension (which may differ)."""
    return mpi_ops.allgather(tf.convert_to_tensor(value), name=name, process_set=process_set)


def broadcast(
    value: Any,
    root_rank: int,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> tf.Tensor:
    """root_rank's value (a global rank, a member of the set), on every member of the set."""
    return mpi_ops.broadcast(
        tf.convert_to_tensor(value), root_rank, name=name, process_set=process_set
    )


def reducescatter(
    value: Any,
    name: str | None = None,
    op: ReduceOp | None = None,
    process_set: ProcessSet = global_process_set,
) -> tf.Tensor:
    """This rank's block of the reduction over the set (Average by default) along the first
    dimension."""
    return mpi_ops.reducescatter(
        tf.convert_to_tensor(value), op=op, name=name, process_set=process_set
    )


__all__ = ["allgather", "allreduce", "broadcast", "reducescatter"]
