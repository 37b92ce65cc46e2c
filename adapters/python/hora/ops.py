"""hora's collectives for any tensor that speaks DLPack or the buffer protocol.

Every collective has an ``_async`` form that returns a :class:`hora.Handle` at once, and a
blocking form (the ``_async`` call, then :func:`synchronize`). Outputs whose shape is known
only after the ranks agreed (allgather, alltoall, reducescatter) are made by ``allocator``
(``allocator(dtype_name, shape)``, NumPy arrays by default), so a framework adapter receives
its own tensors without a copy. Names identify a collective across ranks while it is in
flight; unnamed calls are numbered in call order, which must then match on every rank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from hora import _core, _numpy_alloc
from hora._internal.args import group_names, reduce_op, reduction, tensor_name, wire
from hora._internal.reduce_ops import ReduceOp
from hora.compression import Compressor
from hora.process_sets import ProcessSet, global_process_set, set_id

Handle = _core.Handle

# An output allocator: ``allocator(dtype_name, shape)`` returns a new C-contiguous tensor of
# that hora dtype ("float32", ...) and shape, called once the ranks agreed on the shape.
Allocator = Callable[[str, tuple[int, ...]], Any]


def _empty_like(tensor: Any, name: str | None = None) -> np.ndarray:
    dtype, shape, device = _core.describe(tensor, tensor_name(name))
    if device != "cpu":
        raise ValueError(f"hora's NumPy API needs CPU tensors, got one on {device}")
    return _numpy_alloc.allocate(dtype, shape)


def poll(handle: Handle) -> bool:
    """True when the collective behind ``handle`` completed (never blocks)."""
    return handle.poll()


def synchronize(handle: Handle) -> Any:
    """Waits for ``handle`` (Ctrl-C interrupts; at most HORA_TIMEOUT_S) and returns its result."""
    return handle.wait()


def allreduce_async(
    tensor: Any,
    average: bool | None = None,
    name: str | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = None,
    output: Any = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts ``output = postscale * op(prescale * tensor)`` over ranks; a new array by default."""
    if output is None:
        output = _empty_like(tensor, name)
    return _core.allreduce_async(
        tensor,
        output,
        tensor_name(name),
        *reduction(op, average, prescale_factor, postscale_factor, wire(compression)),
        process_set=set_id(process_set),
    )


def allreduce(
    tensor: Any,
    average: bool | None = None,
    name: str | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = None,
    output: Any = None,
    process_set: ProcessSet = global_process_set,
) -> Any:
    """The reduction of ``tensor`` over every rank, in a new array (or ``output``)."""
    return synchronize(
        allreduce_async(
            tensor,
            average,
            name,
            op,
            prescale_factor,
            postscale_factor,
            compression,
            output,
            process_set=process_set,
        )
    )


def allreduce_async_(
    tensor: Any,
    average: bool | None = None,
    name: str | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts an in-place allreduce of ``tensor``."""
    return _core.allreduce_async(
        tensor,
        None,
        tensor_name(name),
        *reduction(op, average, prescale_factor, postscale_factor, wire(compression)),
        process_set=set_id(process_set),
    )


def allreduce_(
    tensor: Any,
    average: bool | None = None,
    name: str | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = None,
    process_set: ProcessSet = global_process_set,
) -> Any:
    """Reduces ``tensor`` over every rank in place and returns it."""
    return synchronize(
        allreduce_async_(
            tensor,
            average,
            name,
            op,
            prescale_factor,
            postscale_factor,
            compression,
            process_set=process_set,
        )
    )


def grouped_allreduce_async(
    tensors: Iterable[Any],
    average: bool | None = None,
    names: Sequence[str] | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = None,
    outputs: Sequence[Any] | None = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts one allreduce of a list of tensors, fused as a unit; new arrays by default.

    ``names`` (one per tensor) or ``name`` (a prefix: ``name.0``, ``name.1``, ...)."""
    tensors = list(tensors)
    if outputs is None:
        outputs = [_empty_like(t, name) for t in tensors]
    return _core.grouped_allreduce_async(
        tensors,
        list(outputs),
        group_names(len(tensors), names, name),
        *reduction(op, average, prescale_factor, postscale_factor, wire(compression)),
        process_set=set_id(process_set),
    )


def grouped_allreduce(
    tensors: Iterable[Any],
    average: bool | None = None,
    names: Sequence[str] | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = None,
    outputs: Sequence[Any] | None = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> list[Any]:
    """The reductions of a list of tensors (one fused unit), as a list."""
    return synchronize(
        grouped_allreduce_async(
            tensors,
            average,
            names,
            op,
            prescale_factor,
            postscale_factor,
            compression,
            outputs,
            name,
            process_set=process_set,
        )
    )


def grouped_allreduce_async_(
    tensors: Iterable[Any],
    average: bool | None = None,
    names: Sequence[str] | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts an in-place grouped allreduce."""
    tensors = list(tensors)
    return _core.grouped_allreduce_async(
        tensors,
        [None] * len(tensors),
        group_names(len(tensors), names, name),
        *reduction(op, average, prescale_factor, postscale_factor, wire(compression)),
        process_set=set_id(process_set),
    )


def grouped_allreduce_(
    tensors: Iterable[Any],
    average: bool | None = None,
    names: Sequence[str] | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> list[Any]:
    """Reduces a list of tensors in place, as one fused unit; returns the list."""
    return synchronize(
        grouped_allreduce_async_(
            tensors,
            average,
            names,
            op,
            prescale_factor,
            postscale_factor,
            compression,
            name,
            process_set=process_set,
        )
    )


def allgather_async(
    tensor: Any,
    name: str | None = None,
    allocator: Allocator | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts the concatenation of every rank's ``tensor`` along the first dimension."""
    return _core.allgather_async(
        tensor,
        allocator or _numpy_alloc.allocate,
        tensor_name(name),
        process_set=set_id(process_set),
    )


def allgather(
    tensor: Any,
    name: str | None = None,
    allocator: Allocator | None = None,
    process_set: ProcessSet = global_process_set,
) -> Any:
    """Every rank's ``tensor`` concatenated along the first dimension (which may differ)."""
    return synchronize(allgather_async(tensor, name, allocator, process_set=process_set))


def broadcast_async_(
    tensor: Any,
    root_rank: int,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts broadcasting root's ``tensor`` into every rank's ``tensor``."""
    return _core.broadcast_async(
        tensor, int(root_rank), tensor_name(name), process_set=set_id(process_set)
    )


def broadcast_(
    tensor: Any,
    root_rank: int,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Any:
    """Overwrites ``tensor`` with root's, in place; returns it."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set=process_set))


def broadcast_async(
    tensor: Any,
    root_rank: int,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts a broadcast into a copy of ``tensor`` (a new NumPy array)."""
    source = tensor if isinstance(tensor, np.ndarray) else np.from_dlpack(tensor)
    copy = np.array(source, order="C", copy=True)
    return _core.broadcast_async(
        copy, int(root_rank), tensor_name(name), process_set=set_id(process_set)
    )


def broadcast(
    tensor: Any,
    root_rank: int,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> np.ndarray:
    """Root's ``tensor``, in a new array on every rank."""
    return synchronize(broadcast_async(tensor, root_rank, name, process_set=process_set))


def alltoall_async(
    tensor: Any,
    splits: Sequence[int] | None = None,
    name: str | None = None,
    allocator: Allocator | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts an alltoall: ``splits[p]`` first-dimension rows go to rank p (None: even)."""
    splits = [] if splits is None else [int(s) for s in splits]
    return _core.alltoall_async(
        tensor,
        splits,
        allocator or _numpy_alloc.allocate,
        tensor_name(name),
        process_set=set_id(process_set),
    )


def alltoall(
    tensor: Any,
    splits: Sequence[int] | None = None,
    name: str | None = None,
    allocator: Allocator | None = None,
    process_set: ProcessSet = global_process_set,
) -> Any | tuple[Any, np.ndarray]:
    """The rows every rank sent to this one, in rank order. With ``splits`` given, returns
    ``(output, received_splits)`` as Horovod does."""
    output, received = synchronize(
        alltoall_async(tensor, splits, name, allocator, process_set=process_set)
    )
    if splits is None:
        return output
    return output, np.asarray(received, dtype=np.int64)


def reducescatter_async(
    tensor: Any,
    name: str | None = None,
    op: ReduceOp | None = None,
    allocator: Allocator | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts a reducescatter along the first dimension: this rank's block of
    ``postscale_factor * op(prescale_factor * tensor)``."""
    return _core.reducescatter_async(
        tensor,
        allocator or _numpy_alloc.allocate,
        tensor_name(name),
        reduce_op(op),
        prescale=float(prescale_factor),
        postscale=float(postscale_factor),
        process_set=set_id(process_set),
    )


def reducescatter(
    tensor: Any,
    name: str | None = None,
    op: ReduceOp | None = None,
    allocator: Allocator | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    process_set: ProcessSet = global_process_set,
) -> Any:
    """This rank's block of the reduction (the first rows % size ranks get one row more)."""
    return synchronize(
        reducescatter_async(
            tensor, name, op, allocator, prescale_factor, postscale_factor, process_set=process_set
        )
    )


def barrier(process_set: ProcessSet = global_process_set) -> None:
    """Returns once every rank called barrier (Ctrl-C interrupts)."""
    synchronize(_core.barrier_async(process_set=set_id(process_set)))


def join(process_set: ProcessSet = global_process_set) -> int:
    """This rank has no more data; returns the last rank to join (the same on every rank).
    Until every rank joined, this rank contributes zeros to the others' allreduces."""
    return synchronize(_core.join_async(process_set=set_id(process_set)))


__all__ = [
    "Handle",
    "allgather",
    "allgather_async",
    "allreduce",
    "allreduce_",
    "allreduce_async",
    "allreduce_async_",
    "alltoall",
    "alltoall_async",
    "barrier",
    "broadcast",
    "broadcast_",
    "broadcast_async",
    "broadcast_async_",
    "grouped_allreduce",
    "grouped_allreduce_",
    "grouped_allreduce_async",
    "grouped_allreduce_async_",
    "join",
    "poll",
    "reducescatter",
    "reducescatter_async",
    "synchronize",
]
