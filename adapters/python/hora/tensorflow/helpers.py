"""Horovod's small helpers exported by horovod.tensorflow (from its mpi_ops)."""

from __future__ import annotations

from hora._internal import args
from hora._internal.reduce_ops import ReduceOp


def handle_average_backwards_compatibility(op: ReduceOp | None, average: bool | None) -> ReduceOp:
    """The reduce op of Horovod's (op, deprecated average) pair: ``average`` True/False is
    Average/Sum, neither is Average; both is a ValueError."""
    return args.reduce_op(op, average)


def check_num_rank_power_of_2(num_rank: int) -> bool:
    """True when num_rank is a power of two (Horovod's Adasum precondition)."""
    return num_rank > 0 and (num_rank & (num_rank - 1)) == 0


__all__ = ["check_num_rank_power_of_2", "handle_average_backwards_compatibility"]
