"""hora's collectives for any tensor that speaks DLPack or the buffer protocol.

Every collective has an ``_async`` form that returns a :class:`hora.Handle` at once, and a
blocking form (the ``_async`` call, then :func:`synchronize`). Outputs whose shape is known
only after the ranks agreed (allgather, alltoall, reducescatter) are made by ``allocator``
(``allocator(dtype_name, shape)``, NumPy arrays by default), so a framework adapter receives
its own tensors without a copy. Names identify a collective across ranks while it is in
flight; unnamed calls are numbered in call order, which must then match on every rank.
"""

from __future__ import annotations

import numpy as np

from hora import _core, _numpy_alloc

Average = _core.ReduceOp.Average
Sum = _core.ReduceOp.Sum
Min = _core.ReduceOp.Min
Max = _core.ReduceOp.Max
Product = _core.ReduceOp.Product

Handle = _core.Handle


class Adasum:
    """Horovod's Adasum op: not built into hora (no algorithm implements it); passing it raises."""


def _op(op, average=None):
    """Resolves Horovod's deprecated ``average`` flag and checks the op."""
    if average is not None:
        if op is not None:
            raise ValueError("pass either op or the deprecated average flag, not both")
        return Average if average else Sum
    if op is None:
        return Average
    if op is Adasum:
        from hora.errors import UnimplementedError

        raise UnimplementedError("op Adasum is not built into hora; use Average or Sum")
    if not isinstance(op, _core.ReduceOp):
        raise ValueError(f"op {op!r}: expected hora.Average, Sum, Min, Max or Product")
    return op


def _compression(compression):
    if compression is None:
        return _core.Compression.none
    if isinstance(compression, _core.Compression):
        return compression
    wire = getattr(compression, "wire", None)
    if isinstance(wire, _core.Compression):
        return wire
    raise ValueError(f"compression {compression!r}: expected hora.Compression.none, fp16 or bf16")


def _name(name):
    if name is None:
        return ""
    if not isinstance(name, str):
        raise ValueError(f"name {name!r}: expected a str or None")
    return name


def _empty_like(tensor, name=None):
    dtype, shape, device = _core.describe(tensor, _name(name))
    if device != "cpu":
        raise ValueError(f"hora's NumPy API needs CPU tensors, got one on {device}")
    return _numpy_alloc.allocate(dtype, shape)


def poll(handle):
    """True when the collective behind ``handle`` completed (never blocks)."""
    return handle.poll()


def synchronize(handle):
    """Waits for ``handle`` (Ctrl-C interrupts; at most HORA_TIMEOUT_S) and returns its result."""
    return handle.wait()


def allreduce_async(
    tensor,
    average=None,
    name=None,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    compression=None,
    output=None,
):
    """Starts ``output = postscale * op(prescale * tensor)`` over ranks; a new array by default."""
    if output is None:
        output = _empty_like(tensor, name)
    return _core.allreduce_async(
        tensor,
        output,
        _name(name),
        _op(op, average),
        float(prescale_factor),
        float(postscale_factor),
        _compression(compression),
    )


def allreduce(
    tensor,
    average=None,
    name=None,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    compression=None,
    output=None,
):
    """The reduction of ``tensor`` over every rank, in a new array (or ``output``)."""
    return synchronize(
        allreduce_async(
            tensor, average, name, op, prescale_factor, postscale_factor, compression, output
        )
    )


def allreduce_async_(
    tensor,
    average=None,
    name=None,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    compression=None,
):
    """Starts an in-place allreduce of ``tensor``."""
    return _core.allreduce_async(
        tensor,
        None,
        _name(name),
        _op(op, average),
        float(prescale_factor),
        float(postscale_factor),
        _compression(compression),
    )


def allreduce_(
    tensor,
    average=None,
    name=None,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    compression=None,
):
    """Reduces ``tensor`` over every rank in place and returns it."""
    return synchronize(
        allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, compression)
    )


def grouped_allreduce_async(
    tensors,
    average=None,
    names=None,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    compression=None,
    outputs=None,
    name=None,
):
    """Starts one allreduce of a list of tensors, fused as a unit; new arrays by default.

    ``names`` (one per tensor) or ``name`` (a prefix: ``name.0``, ``name.1``, ...)."""
    tensors = list(tensors)
    if outputs is None:
        outputs = [_empty_like(t, name) for t in tensors]
    return _core.grouped_allreduce_async(
        tensors,
        list(outputs),
        _group_names(tensors, names, name),
        _op(op, average),
        float(prescale_factor),
        float(postscale_factor),
        _compression(compression),
    )


def grouped_allreduce(
    tensors,
    average=None,
    names=None,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    compression=None,
    outputs=None,
    name=None,
):
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
        )
    )


def grouped_allreduce_async_(
    tensors,
    average=None,
    names=None,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    compression=None,
    name=None,
):
    """Starts an in-place grouped allreduce."""
    tensors = list(tensors)
    return _core.grouped_allreduce_async(
        tensors,
        [None] * len(tensors),
        _group_names(tensors, names, name),
        _op(op, average),
        float(prescale_factor),
        float(postscale_factor),
        _compression(compression),
    )


def grouped_allreduce_(
    tensors,
    average=None,
    names=None,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    compression=None,
    name=None,
):
    """Reduces a list of tensors in place, as one fused unit; returns the list."""
    return synchronize(
        grouped_allreduce_async_(
            tensors, average, names, op, prescale_factor, postscale_factor, compression, name
        )
    )


def _group_names(tensors, names, name):
    if names is not None:
        names = [_name(n) for n in names]
        if len(names) != len(tensors):
            raise ValueError(f"grouped allreduce: {len(names)} names for {len(tensors)} tensors")
        return names
    if name is not None:
        return [f"{_name(name)}.{i}" for i in range(len(tensors))]
    return [""] * len(tensors)


def allgather_async(tensor, name=None, allocator=None):
    """Starts the concatenation of every rank's ``tensor`` along the first dimension."""
    return _core.allgather_async(tensor, allocator or _numpy_alloc.allocate, _name(name))


def allgather(tensor, name=None, allocator=None):
    """Every rank's ``tensor`` concatenated along the first dimension (which may differ)."""
    return synchronize(allgather_async(tensor, name, allocator))


def broadcast_async_(tensor, root_rank, name=None):
    """Starts broadcasting root's ``tensor`` into every rank's ``tensor``."""
    return _core.broadcast_async(tensor, int(root_rank), _name(name))


def broadcast_(tensor, root_rank, name=None):
    """Overwrites ``tensor`` with root's, in place; returns it."""
    return synchronize(broadcast_async_(tensor, root_rank, name))


def broadcast_async(tensor, root_rank, name=None):
    """Starts a broadcast into a copy of ``tensor`` (a new NumPy array)."""
    source = tensor if isinstance(tensor, np.ndarray) else np.from_dlpack(tensor)
    copy = np.array(source, order="C", copy=True)
    return _core.broadcast_async(copy, int(root_rank), _name(name))


def broadcast(tensor, root_rank, name=None):
    """Root's ``tensor``, in a new array on every rank."""
    return synchronize(broadcast_async(tensor, root_rank, name))


def alltoall_async(tensor, splits=None, name=None, allocator=None):
    """Starts an alltoall: ``splits[p]`` first-dimension rows go to rank p (None: even)."""
    splits = [] if splits is None else [int(s) for s in splits]
    return _core.alltoall_async(tensor, splits, allocator or _numpy_alloc.allocate, _name(name))


def alltoall(tensor, splits=None, name=None, allocator=None):
    """The rows every rank sent to this one, in rank order. With ``splits`` given, returns
    ``(output, received_splits)`` as Horovod does."""
    output, received = synchronize(alltoall_async(tensor, splits, name, allocator))
    if splits is None:
        return output
    return output, np.asarray(received, dtype=np.int64)


def reducescatter_async(tensor, name=None, op=None, allocator=None):
    """Starts a reducescatter along the first dimension."""
    return _core.reducescatter_async(
        tensor, allocator or _numpy_alloc.allocate, _name(name), _op(op)
    )


def reducescatter(tensor, name=None, op=None, allocator=None):
    """This rank's block of the reduction (the first rows % size ranks get one row more)."""
    return synchronize(reducescatter_async(tensor, name, op, allocator))


def barrier():
    """Returns once every rank called barrier (Ctrl-C interrupts)."""
    return synchronize(_core.barrier_async())


def join():
    """This rank has no more data; returns the last rank to join (the same on every rank).
    Until every rank joined, this rank contributes zeros to the others' allreduces."""
    return synchronize(_core.join_async())
