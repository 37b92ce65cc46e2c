"""Horovod's rank ops (horovod.tensorflow.mpi_ops.size_op, rank_op, ...): the job's layout as
int32 scalar tensors, usable eagerly and inside a tf.function.

Horovod computes them with custom ops at run time because its elastic mode can change the
job's size between steps. A hora job keeps its layout from init to shutdown, so these are
constants of the value at the call (inside a tf.function, at trace time), which is the value
Horovod's op would return at run time in any non-elastic job.
"""

from __future__ import annotations

import tensorflow as tf

from hora import errors, runtime


def _layout_tensor(value: int, process_set_id: int, name: str | None, what: str) -> tf.Tensor:
    if process_set_id != 0:
        raise errors.UnimplementedError(
            f"{what}(process_set_id={process_set_id}): only the global process set (0) has "
            "a rank op in hora.tensorflow"
        )
    return tf.constant(value, dtype=tf.int32, name=name or what)


def size_op(process_set_id: int = 0, name: str | None = None) -> tf.Tensor:
    """The number of ranks, as an int32 scalar tensor."""
    return _layout_tensor(runtime.size(), process_set_id, name, "size_op")


def local_size_op(name: str | None = None) -> tf.Tensor:
    """The number of ranks on this host, as an int32 scalar tensor."""
    return _layout_tensor(runtime.local_size(), 0, name, "local_size_op")


def cross_size_op(name: str | None = None) -> tf.Tensor:
    """The number of hosts (ranks with this local rank), as an int32 scalar tensor."""
    return _layout_tensor(runtime.cross_size(), 0, name, "cross_size_op")


def rank_op(name: str | None = None) -> tf.Tensor:
    """This process's rank, as an int32 scalar tensor."""
    return _layout_tensor(runtime.rank(), 0, name, "rank_op")


def local_rank_op(name: str | None = None) -> tf.Tensor:
    """This process's rank on its host, as an int32 scalar tensor."""
    return _layout_tensor(runtime.local_rank(), 0, name, "local_rank_op")


def cross_rank_op(name: str | None = None) -> tf.Tensor:
    """This host's index among the hosts, as an int32 scalar tensor."""
    return _layout_tensor(runtime.cross_rank(), 0, name, "cross_rank_op")


__all__ = [
    "cross_rank_op",
    "cross_size_op",
    "local_rank_op",
    "local_size_op",
    "rank_op",
    "size_op",
]
