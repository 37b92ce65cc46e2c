"""Checks and converts the arguments that every API's collectives take alike, into what the
binding (hora._core) takes: the reduce op (with Horovod's deprecated ``average`` flag), the
scale factors, the compression, tensor names and the names of a group's members."""

from __future__ import annotations

from collections.abc import Sequence

from hora import _core
from hora._internal.reduce_ops import Average, Sum


def reduce_op(op: object = None, average: bool | None = None) -> _core.ReduceOp:
    """``op`` as the binding's ReduceOp (None: Average), or Horovod's deprecated ``average``
    flag (True: Average, False: Sum). Raises ValueError for both or for an unknown op."""
    if average is not None:
        if op is not None:
            raise ValueError("pass either op or the deprecated average flag, not both")
        return Average if average else Sum
    if op is None:
        return Average
    if not isinstance(op, _core.ReduceOp):
        raise ValueError(f"op {op!r}: expected hora.Average, Sum, Min, Max, Product or Adasum")
    return op


def wire(compression: object) -> _core.Compression:
    """``compression`` (None, hora.Compression.none/fp16/bf16 or the binding's value) as the
    binding's Compression; ValueError for anything else."""
    if compression is None:
        return _core.Compression.none
    if isinstance(compression, _core.Compression):
        return compression
    value = getattr(compression, "wire", None)
    if isinstance(value, _core.Compression):
        return value
    raise ValueError(
        f"compression {compression!r}: expected hora.Compression.none, fp16 or bf16 (a "
        "Compressor subclass of one's own works in hora.torch and hora.tensorflow)"
    )


def reduction(
    op: object,
    average: bool | None,
    prescale_factor: float,
    postscale_factor: float,
    compression: _core.Compression,
) -> tuple[_core.ReduceOp, float, float, _core.Compression]:
    """The binding's trailing allreduce arguments: (op, prescale, postscale, compression)."""
    return reduce_op(op, average), float(prescale_factor), float(postscale_factor), compression


def tensor_name(name: str | None) -> str:
    """The binding's name for a collective: ``name``, or "" (numbered in call order) for None."""
    if name is None:
        return ""
    if not isinstance(name, str):
        raise ValueError(f"name {name!r}: expected a str or None")
    return name


def group_names(count: int, names: Sequence[str] | None, name: str | None) -> list[str]:
    """The member names of a grouped allreduce of ``count`` tensors: ``names`` (one per tensor),
    else ``name`` as a prefix (``name.0``, ``name.1``, ...), else unnamed."""
    if names is not None:
        checked = [tensor_name(n) for n in names]
        if len(checked) != count:
            raise ValueError(f"grouped allreduce: {len(checked)} names for {count} tensors")
        return checked
    if name is not None:
        return [f"{tensor_name(name)}.{i}" for i in range(count)]
    return [""] * count
