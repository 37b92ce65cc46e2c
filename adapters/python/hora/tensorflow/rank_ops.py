"""Horovod's rank ops (horovod.tensorflow.mpi_ops.size_op, rank_op, ...): the job's layout as
int32 scalar tensors, usable eagerly and inside a tf.function.

Horovod computes them with custom ops at run time because its elastic mode can change the
job's size between steps. A hora job keeps its layout from init to shutdown, so these are
constants of the value at the call (inside a tf.function, at trace time), which is the value
Horovod's op would return at run time in any non-elastic job. size_op and
process_set_included_op take a registered process set's id (0: the global set), as Horovod's.
"""

from __future__ import annotations

import tensorflow as tf

from hora import runtime
from hora.process_sets import process_set_by_id


def _layout_tensor(value: int, name: str | None, what: str) -> tf.Tensor:
    return tf.constant(value, dtype=tf.int32, name=name or what)


def _set_ranks(process_set_id: int) -> list[int]:
    """The ranks of registered set ``process_set_id`` (ValueError for an unknown id)."""
    if process_set_id == 0:
        return list(range(runtime.size()))
    return list(process_set_by_id(process_set_id).ranks or [])


def size_op(process_set_id: int = 0, name: str | None = None) -> tf.Tensor:
    """The number of ranks of the process set (0: the job), as an int32 scalar tensor."""
    return _layout_tensor(len(_set_ranks(process_set_id)), name, "size_op")


def process_set_included_op(process_set_id: int = 0, name: str | None = None) -> tf.Tensor:
    """1 when this process is a member of the process set, else 0 (an int32 scalar)."""
    included = runtime.rank() in _set_ranks(process_set_id)
    return _layout_tensor(int(included), name, "process_set_included_op")


def local_size_op(name: str | None = None) -> tf.Tensor:
    """The number of ranks on this host, as an int32 scalar tensor."""
    return _layout_tensor(runtime.local_size(), name, "local_size_op")


def cross_size_op(name: str | None = None) -> tf.Tensor:
    """The number of hosts (ranks with this local rank), as an int32 scalar tensor."""
    return _layout_tensor(runtime.cross_size(), name, "cross_size_op")


def rank_op(name: str | None = None) -> tf.Tensor:
    """This process's rank, as an int32 scalar tensor."""
    return _layout_tensor(runtime.rank(), name, "rank_op")


def local_rank_op(name: str | None = None) -> tf.Tensor:
    """This process's rank on its host, as an int32 scalar tensor."""
    return _layout_tensor(runtime.local_rank(), name, "local_rank_op")


def cross_rank_op(name: str | None = None) -> tf.Tensor:
    """This host's index among the hosts, as an int32 scalar tensor."""
    return _layout_tensor(runtime.cross_rank(), name, "cross_rank_op")


__all__ = [
    "cross_rank_op",
    "cross_size_op",
    "local_rank_op",
    "local_size_op",
    "process_set_included_op",
    "rank_op",
    "size_op",
]
