"""Horovod's collective API on torch tensors (horovod.torch.mpi_ops), over hora's engine.

Every call has an ``_async`` form returning a handle (:func:`synchronize` waits and returns
the result, :func:`poll` tells whether it is done) and a blocking form. Out-of-place calls
return new tensors on the input's device; ``_``-suffixed calls work in place. allreduce,
allgather, broadcast, alltoall and reducescatter (and their grouped forms) are
differentiable, as in Horovod. A call whose name is still in flight on this rank raises
ValueError at once, as Horovod's do.

Where hora departs from Horovod:
- the built-in compressions happen inside the engine (float32 tensors travel as
  float16/bfloat16 and are cast back on arrival; other dtypes travel uncompressed); a
  Compressor of one's own runs around the collective, as in Horovod.
- grouped allgather and reducescatter enqueue their members together (all or none), but
  each member negotiates on its own (the engine fuses groups of allreduces only).
- op=Adasum (allreduce and grouped allreduce of float tensors) is hora's own algorithm on
  every backend; CUDA tensors are staged through host memory (no NCCL Adasum).

Every call takes ``process_set=`` (a registered :class:`hora.ProcessSet`; the global set by
default), as in Horovod: root ranks stay global ranks, results are the set's, and the
gradients of the differentiable calls run on the same set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from hora import _core, ops, runtime
from hora._internal import reduce_ops
from hora._internal.args import group_names, reduce_op, reduction, tensor_name, wire
from hora._internal.reduce_ops import *  # noqa: F403 - Horovod's mpi_ops exports the reduce ops
from hora._internal.reduce_ops import ReduceOp
from hora.compression import Compression, Compressor, user_compressor
from hora.errors import UnimplementedError
from hora.ops import Handle
from hora.process_sets import ProcessSet, global_process_set, set_id
from hora.torch import _tensors

Average = reduce_ops.Average
Sum = reduce_ops.Sum


def set_size_rank(process_set: ProcessSet) -> tuple[int, int]:
    """The registered set's size and this rank's index in it (-1 outside it); ValueError for
    a set that is not registered. The gradients and averages of the set's collectives use
    them. None is the global set, as for set_id."""
    if process_set is None:
        process_set = global_process_set
    set_id(process_set)
    return process_set.size(), process_set.rank()


def _wire(tensor: torch.Tensor, compression: Compressor | None) -> _core.Compression:
    """Compression applies to float32 tensors; others travel as they are."""
    if compression is None or tensor.dtype != torch.float32:
        return _core.Compression.none
    return wire(compression)


class _CompositeHandle:
    """The handle of a call made of several collectives (grouped allgather and
    reducescatter, sparse_allreduce_async): synchronize() waits for each and returns
    ``finish`` of their results. Calling it does the same (Horovod's sparse handle is a
    callable)."""

    def __init__(self, handles: list[Handle], finish: Any, name: str) -> None:
        self.handles = handles
        self.finish = finish
        self.name = name

    def poll(self) -> bool:
        return all(h.poll() for h in self.handles)

    def wait(self) -> Any:
        return self.finish([synchronize(h) for h in self.handles])

    def __call__(self) -> Any:
        return self.wait()

    def __repr__(self) -> str:
        return f"<hora.torch handle of {len(self.handles)} collectives '{self.name}'>"


def poll(handle: Handle | _CompositeHandle) -> bool:
    """True when the collective(s) behind ``handle`` completed (never blocks)."""
    return handle.poll()


def synchronize(handle: Handle | _CompositeHandle) -> Any:
    """Waits for ``handle`` (Ctrl-C interrupts; at most HORA_TIMEOUT_S) and returns its
    result: the output tensor, or (output, received_splits) for alltoall, the list of outputs
    of a grouped call, the sparse tensor of sparse_allreduce_async. For CUDA tensors the
    host waits only until hora enqueued the result's last kernel; the current stream of their
    device then waits for it on the GPU (no host synchronisation), so work queued on that
    stream afterwards sees the result. Other streams must wait on the current one."""
    if isinstance(handle, _CompositeHandle):
        return handle.wait()
    if handle.device >= 0:
        result = handle.wait_on_stream(torch.cuda.current_stream(handle.device).cuda_stream)
    else:
        result = handle.wait()
    if handle.kind == "alltoall":
        output, received = result
        return output, torch.tensor(received, dtype=torch.int32)
    return result


# ---- allreduce ---------------------------------------------------------------------------


def _start_allreduce(
    t: torch.Tensor,
    output: torch.Tensor | None,
    name: str | None,
    op: ReduceOp | None,
    average: bool | None,
    prescale_factor: float,
    postscale_factor: float,
    compression: Compressor | None,
    process_set: ProcessSet,
) -> Handle:
    """The binding's allreduce of the contiguous, detached ``t`` into ``output`` (None: in
    place) on ``t``'s current stream; a user's Compressor runs around it."""
    user = user_compressor(compression)
    if user is not None:
        return _start_user_compressed(
            [t], [output], name, op, average, prescale_factor, postscale_factor, user, process_set
        )
    return _core.allreduce_async(
        t,
        output,
        tensor_name(name),
        *reduction(op, average, prescale_factor, postscale_factor, _wire(t, compression)),
        stream=_tensors.stream_of(t),
        process_set=set_id(process_set),
    )


def _start_grouped_allreduce(
    ts: list[torch.Tensor],
    outputs: Sequence[torch.Tensor | None],
    name: str | None,
    op: ReduceOp | None,
    average: bool | None,
    prescale_factor: float,
    postscale_factor: float,
    compression: Compressor | None,
    process_set: ProcessSet,
) -> Handle:
    """The binding's grouped allreduce of the contiguous, detached ``ts`` into ``outputs``
    (None each: in place). Compressed only when every member is float32; a user's
    Compressor runs around it."""
    user = user_compressor(compression)
    if user is not None:
        return _start_user_compressed(
            ts,
            outputs,
            name,
            op,
            average,
            prescale_factor,
            postscale_factor,
            user,
            process_set,
            grouped=True,
        )
    same_dtype = bool(ts) and all(t.dtype == ts[0].dtype for t in ts)
    wire_format = _wire(ts[0], compression) if same_dtype else _core.Compression.none
    return _core.grouped_allreduce_async(
        ts,
        outputs,
        group_names(len(ts), None, name),
        *reduction(op, average, prescale_factor, postscale_factor, wire_format),
        stream=_tensors.stream_of(ts[0]) if ts else 0,
        process_set=set_id(process_set),
    )


def _start_user_compressed(
    ts: list[torch.Tensor],
    outputs: Sequence[torch.Tensor | None],
    name: str | None,
    op: ReduceOp | None,
    average: bool | None,
    prescale_factor: float,
    postscale_factor: float,
    user: Any,
    process_set: ProcessSet,
    grouped: bool = False,
) -> _CompositeHandle:
    """A (grouped) allreduce with a user's Compressor, as Horovod runs one: each tensor's
    ``compress`` before, the reduction of what it returned, ``decompress`` after, written into
    ``outputs`` (None: into the tensor itself). synchronize returns the outputs (a list when
    ``grouped``)."""
    packed = [user.compress(t) for t in ts]
    sent = [_tensors.contiguous(c) for c, _ in packed]
    received = [torch.empty_like(c, memory_format=torch.contiguous_format) for c in sent]
    reduction_args = (name, op, average, prescale_factor, postscale_factor, None, process_set)
    if grouped:
        handle = _start_grouped_allreduce(sent, received, *reduction_args)
    else:
        handle = _start_allreduce(sent[0], received[0], *reduction_args)
    targets = [t if o is None else o for t, o in zip(ts, outputs, strict=True)]

    def finish(results: list[Any]) -> Any:
        reduced = results[0] if grouped else results
        for target, r, (_, ctx) in zip(targets, reduced, packed, strict=True):
            target.copy_(user.decompress(r, ctx))
        return targets if grouped else targets[0]

    return _CompositeHandle([handle], finish, name or "allreduce")


def allreduce_async(
    tensor: torch.Tensor,
    average: bool | None = None,
    name: str | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = Compression.none,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts an allreduce of ``tensor`` into a new tensor; returns a handle."""
    t = _tensors.contiguous(tensor)
    output = torch.empty_like(t, memory_format=torch.contiguous_format)
    return _start_allreduce(
        t, output, name, op, average, prescale_factor, postscale_factor, compression, process_set
    )


def allreduce_async_(
    tensor: torch.Tensor,
    average: bool | None = None,
    name: str | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = Compression.none,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts an in-place allreduce of ``tensor``; returns a handle."""
    t = _tensors.in_place(tensor, name)
    return _start_allreduce(
        t, None, name, op, average, prescale_factor, postscale_factor, compression, process_set
    )


def allreduce_(
    tensor: torch.Tensor,
    average: bool | None = None,
    name: str | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = Compression.none,
    process_set: ProcessSet = global_process_set,
) -> torch.Tensor:
    """Reduces ``tensor`` over the set's ranks in place; returns it."""
    synchronize(
        allreduce_async_(
            tensor, average, name, op, prescale_factor, postscale_factor, compression, process_set
        )
    )
    return tensor


class _Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        tensor: torch.Tensor,
        name: str | None,
        op: ReduceOp | None,
        prescale_factor: float,
        postscale_factor: float,
        compression: Compressor | None,
        process_set: ProcessSet,
    ) -> torch.Tensor:
        ctx.op, ctx.pre, ctx.post, ctx.process_set = (
            op,
            prescale_factor,
            postscale_factor,
            process_set,
        )
        handle = allreduce_async(
            tensor, None, name, op, prescale_factor, postscale_factor, compression, process_set
        )
        return synchronize(handle)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        if ctx.op not in (Average, Sum):
            raise UnimplementedError(
                f"the gradient of allreduce with op {ctx.op.name} is not defined in hora "
                "(Average and Sum only, as in Horovod)"
            )
        handle = allreduce_async(
            grad_output, None, None, ctx.op, ctx.pre, ctx.post, process_set=ctx.process_set
        )
        return synchronize(handle), None, None, None, None, None, None


def allreduce(
    tensor: torch.Tensor,
    average: bool | None = None,
    name: str | None = None,
    compression: Compressor | None = Compression.none,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    process_set: ProcessSet = global_process_set,
) -> torch.Tensor:
    """The reduction of ``tensor`` over the set's ranks (average by default), a new tensor.
    Differentiable: the gradient is the same reduction of the output's gradient."""
    op = reduce_op(op, average)
    return _Allreduce.apply(
        tensor, name, op, prescale_factor, postscale_factor, compression, process_set
    )


def grouped_allreduce_async(
    tensors: Sequence[torch.Tensor],
    average: bool | None = None,
    name: str | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = Compression.none,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts one fused allreduce of a list of tensors into new tensors."""
    ts = [_tensors.contiguous(t) for t in tensors]
    outs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in ts]
    return _start_grouped_allreduce(
        ts, outs, name, op, average, prescale_factor, postscale_factor, compression, process_set
    )


def grouped_allreduce(
    tensors: Sequence[torch.Tensor],
    average: bool | None = None,
    name: str | None = None,
    compression: Compressor | None = Compression.none,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    process_set: ProcessSet = global_process_set,
) -> list[torch.Tensor]:
    """The reductions of a list of tensors, fused as one unit, as a list of new tensors."""
    return synchronize(
        grouped_allreduce_async(
            tensors, average, name, op, prescale_factor, postscale_factor, compression, process_set
        )
    )


def grouped_allreduce_async_(
    tensors: Sequence[torch.Tensor],
    average: bool | None = None,
    name: str | None = None,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    compression: Compressor | None = Compression.none,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts one fused in-place allreduce of a list of tensors."""
    ts = [_tensors.in_place(t, name) for t in tensors]
    outs = [None] * len(ts)
    return _start_grouped_allreduce(
        ts, outs, name, op, average, prescale_factor, postscale_factor, compression, process_set
    )


def grouped_allreduce_(
    tensors: Sequence[torch.Tensor],
    average: bool | None = None,
    name: str | None = None,
    compression: Compressor | None = Compression.none,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    process_set: ProcessSet = global_process_set,
) -> list[torch.Tensor]:
    """Reduces a list of tensors in place, fused as one unit; returns the list."""
    synchronize(
        grouped_allreduce_async_(
            tensors, average, name, op, prescale_factor, postscale_factor, compression, process_set
        )
    )
    return list(tensors)


# ---- allgather ---------------------------------------------------------------------------


def allgather_async(
    tensor: torch.Tensor, name: str | None = None, process_set: ProcessSet = global_process_set
) -> Handle:
    """Starts an allgather of ``tensor`` along the first dimension; returns a handle."""
    t = _tensors.contiguous(tensor)
    return _core.allgather_async(
        t,
        _tensors.allocator_like(t),
        tensor_name(name),
        stream=_tensors.stream_of(t),
        process_set=set_id(process_set),
    )


class _Allgather(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, tensor: torch.Tensor, name: str | None, process_set: ProcessSet
    ) -> torch.Tensor:
        ctx.rows, ctx.process_set = tensor.shape[0], process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        return _allgather_grad(grad_output, ctx.rows, ctx.process_set), None, None


def _allgather_grad(grad_output: torch.Tensor, rows: int, process_set: ProcessSet) -> torch.Tensor:
    """An allgather's input gradient: every member's output depends on every member's input,
    so the gradients are summed over the set, then this rank's ``rows`` rows kept (its block
    is at its index in the set)."""
    grad = synchronize(allreduce_async(grad_output, None, None, Sum, process_set=process_set))
    every = synchronize(allgather_async(torch.tensor([rows], dtype=torch.int64), None, process_set))
    start = int(every[: set_size_rank(process_set)[1]].sum())
    return grad[start : start + rows]


def allgather(
    tensor: torch.Tensor, name: str | None = None, process_set: ProcessSet = global_process_set
) -> torch.Tensor:
    """Every member's ``tensor`` concatenated along the first dimension (which may differ per
    rank), in the order of the set's ranks. Differentiable."""
    return _Allgather.apply(tensor, name, process_set)


def grouped_allgather_async(
    tensors: Sequence[torch.Tensor],
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts an allgather of each tensor, enqueued together (all or none; members named
    ``name.0``, ``name.1``, ... when named); one handle, whose synchronize returns the list of
    outputs. Departure from Horovod: each member negotiates on its own (hora's engine fuses
    groups of allreduces only), so members may complete at different times."""
    ts = [_tensors.contiguous(t) for t in tensors]
    handles = _core.allgather_async_batch(
        ts,
        [_tensors.allocator_like(t) for t in ts],
        group_names(len(ts), None, name),
        stream=_tensors.stream_of(ts[0]) if ts else 0,
        process_set=set_id(process_set),
    )
    return _CompositeHandle(handles, list, name or "grouped_allgather")


class _GroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, name: str | None, process_set: ProcessSet, *tensors: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        ctx.rows, ctx.process_set = [t.shape[0] for t in tensors], process_set
        return tuple(synchronize(grouped_allgather_async(tensors, name, process_set)))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        pairs = zip(grads, ctx.rows, strict=True)
        return (None, None, *(_allgather_grad(g, r, ctx.process_set) for g, r in pairs))


def grouped_allgather(
    tensors: Sequence[torch.Tensor],
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> list[torch.Tensor]:
    """Every member's tensors concatenated along the first dimension, one output per input,
    as a list. Differentiable."""
    return list(_GroupedAllgather.apply(name, process_set, *tensors))


# ---- broadcast ---------------------------------------------------------------------------


def broadcast_async(
    tensor: torch.Tensor,
    root_rank: int,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts a broadcast of root's ``tensor`` (root: a global rank in the set) into a new
    tensor; returns a handle."""
    output = _tensors.contiguous(tensor).clone(memory_format=torch.contiguous_format)
    return broadcast_async_(output, root_rank, name, process_set)


def broadcast_async_(
    tensor: torch.Tensor,
    root_rank: int,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts an in-place broadcast; returns a handle."""
    t = _tensors.in_place(tensor, name)
    return _core.broadcast_async(
        t,
        int(root_rank),
        tensor_name(name),
        stream=_tensors.stream_of(t),
        process_set=set_id(process_set),
    )


def broadcast_(
    tensor: torch.Tensor,
    root_rank: int,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> torch.Tensor:
    """Overwrites ``tensor`` with root's, in place; returns it."""
    synchronize(broadcast_async_(tensor, root_rank, name, process_set))
    return tensor


class _Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, tensor: torch.Tensor, root_rank: int, name: str | None, process_set: ProcessSet
    ) -> torch.Tensor:
        ctx.root, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        handle = allreduce_async(grad_output, None, None, Sum, process_set=ctx.process_set)
        grad = synchronize(handle)
        if runtime.rank() != ctx.root:
            grad = torch.zeros_like(grad)
        return grad, None, None, None


def broadcast(
    tensor: torch.Tensor,
    root_rank: int,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> torch.Tensor:
    """Root's ``tensor`` on every member (root: a global rank), a new tensor. Differentiable
    (the root's input gets the sum of the members' output gradients, the others zero)."""
    return _Broadcast.apply(tensor, root_rank, name, process_set)


# ---- alltoall ----------------------------------------------------------------------------


def alltoall_async(
    tensor: torch.Tensor,
    splits: Sequence[int] | torch.Tensor | None = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Starts an alltoall: ``splits[i]`` first-dimension rows go to the set's i-th rank
    (None: even)."""
    t = _tensors.contiguous(tensor)
    s = (
        []
        if splits is None
        else [int(v) for v in (splits.tolist() if isinstance(splits, torch.Tensor) else splits)]
    )
    return _core.alltoall_async(
        t,
        s,
        _tensors.allocator_like(t),
        tensor_name(name),
        stream=_tensors.stream_of(t),
        process_set=set_id(process_set),
    )


class _Alltoall(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        tensor: torch.Tensor,
        splits: Sequence[int] | torch.Tensor | None,
        name: str | None,
        process_set: ProcessSet,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.received, ctx.process_set = received, process_set
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(
        ctx: Any, grad_output: torch.Tensor, grad_received: torch.Tensor
    ) -> tuple[torch.Tensor | None, ...]:
        # The gradient goes back the way the rows came.
        grad, _ = synchronize(alltoall_async(grad_output, ctx.received, None, ctx.process_set))
        return grad, None, None, None


def alltoall(
    tensor: torch.Tensor,
    splits: Sequence[int] | torch.Tensor | None = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The rows every member sent here, in the order of the set's ranks. With ``splits``
    returns ``(output, received_splits)``, as Horovod does. Differentiable."""
    output, received = _Alltoall.apply(tensor, splits, name, process_set)
    return output if splits is None else (output, received)


# ---- reducescatter -----------------------------------------------------------------------


def reducescatter_async(
    tensor: torch.Tensor,
    name: str | None = None,
    op: ReduceOp | None = None,
    process_set: ProcessSet = global_process_set,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
) -> Handle:
    """Starts a reducescatter along the first dimension (this rank's block of
    ``postscale_factor * op(prescale_factor * tensor)``); returns a handle."""
    t = _tensors.contiguous(tensor)
    return _core.reducescatter_async(
        t,
        _tensors.allocator_like(t),
        tensor_name(name),
        reduce_op(op),
        stream=_tensors.stream_of(t),
        prescale=float(prescale_factor),
        postscale=float(postscale_factor),
        process_set=set_id(process_set),
    )


def _reducescatter_grad(
    grad_output: torch.Tensor, op: ReduceOp, scale: float, process_set: ProcessSet
) -> torch.Tensor:
    """A reducescatter's input gradient: the blocks' gradients gathered over the set
    (divided by the set's size for Average), times the product of the scale factors."""
    if op not in (Average, Sum):
        raise UnimplementedError(
            f"the gradient of reducescatter with op {op.name} is not defined in hora"
        )
    grad = synchronize(allgather_async(grad_output, None, process_set))
    if op == Average:
        grad = grad / set_size_rank(process_set)[0]
    return grad * scale if scale != 1.0 else grad


class _Reducescatter(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        tensor: torch.Tensor,
        name: str | None,
        op: ReduceOp,
        prescale_factor: float,
        postscale_factor: float,
        process_set: ProcessSet,
    ) -> torch.Tensor:
        ctx.op, ctx.scale = op, prescale_factor * postscale_factor
        ctx.process_set = process_set
        handle = reducescatter_async(
            tensor, name, op, process_set, prescale_factor, postscale_factor
        )
        return synchronize(handle)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        grad = _reducescatter_grad(grad_output, ctx.op, ctx.scale, ctx.process_set)
        return grad, None, None, None, None, None


def reducescatter(
    tensor: torch.Tensor,
    name: str | None = None,
    compression: Compressor | None = Compression.none,
    op: ReduceOp | None = None,
    process_set: ProcessSet = global_process_set,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
) -> torch.Tensor:
    """This rank's block of ``postscale_factor * op(prescale_factor * tensor)`` over the set,
    along the first dimension (the first rows % size members get a row more). Differentiable
    for Average and Sum. ``compression`` is accepted for Horovod's signature; reducescatter
    travels uncompressed."""
    pre, post = float(prescale_factor), float(postscale_factor)
    return _Reducescatter.apply(tensor, name, reduce_op(op), pre, post, process_set)


def grouped_reducescatter_async(
    tensors: Sequence[torch.Tensor],
    name: str | None = None,
    op: ReduceOp | None = None,
    process_set: ProcessSet = global_process_set,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
) -> Handle:
    """Starts a reducescatter of each tensor, enqueued together (all or none; members named
    ``name.0``, ...); one handle, whose synchronize returns the list of this rank's blocks.
    Each member negotiates on its own, as in grouped_allgather_async."""
    ts = [_tensors.contiguous(t) for t in tensors]
    handles = _core.reducescatter_async_batch(
        ts,
        [_tensors.allocator_like(t) for t in ts],
        group_names(len(ts), None, name),
        reduce_op(op),
        prescale=float(prescale_factor),
        postscale=float(postscale_factor),
        stream=_tensors.stream_of(ts[0]) if ts else 0,
        process_set=set_id(process_set),
    )
    return _CompositeHandle(handles, list, name or "grouped_reducescatter")


class _GroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        name: str | None,
        op: ReduceOp,
        prescale_factor: float,
        postscale_factor: float,
        process_set: ProcessSet,
        *tensors: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        ctx.op, ctx.scale = op, prescale_factor * postscale_factor
        ctx.process_set = process_set
        handle = grouped_reducescatter_async(
            tensors, name, op, process_set, prescale_factor, postscale_factor
        )
        return tuple(synchronize(handle))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        grad_inputs = [_reducescatter_grad(g, ctx.op, ctx.scale, ctx.process_set) for g in grads]
        return (None, None, None, None, None, *grad_inputs)


def grouped_reducescatter(
    tensors: Sequence[torch.Tensor],
    name: str | None = None,
    compression: Compressor | None = Compression.none,
    op: ReduceOp | None = None,
    process_set: ProcessSet = global_process_set,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
) -> list[torch.Tensor]:
    """reducescatter of each tensor, as a list of this rank's blocks. Differentiable for
    Average and Sum."""
    pre, post = float(prescale_factor), float(postscale_factor)
    return list(_GroupedReducescatter.apply(name, reduce_op(op), pre, post, process_set, *tensors))


# ---- sparse ------------------------------------------------------------------------------


def sparse_allreduce_async(
    tensor: torch.Tensor,
    name: str | None = None,
    op: ReduceOp | None = None,
    process_set: ProcessSet = global_process_set,
) -> Handle:
    """Horovod's allreduce of a sparse COO tensor: an allgather of its indices and one of its
    values (named ``name.indices`` and ``name.values``). synchronize(handle), or calling the
    handle as Horovod's, returns the sparse tensor holding every member's entries (values
    divided by the set's size for Average, the default; Sum keeps them), uncoalesced as
    Horovod's."""
    op = reduce_op(op)
    if op not in (Average, Sum):
        raise ValueError(f"sparse_allreduce_async: op {op.name}, expected Average or Sum")
    t = tensor.detach()
    base = tensor_name(name)
    indices = allgather_async(
        t._indices().t().contiguous(), f"{base}.indices" if base else None, process_set
    )
    values = allgather_async(
        t._values().contiguous(), f"{base}.values" if base else None, process_set
    )
    size = set_size_rank(process_set)[0]

    def finish(results: list[torch.Tensor]) -> torch.Tensor:
        gathered_indices, gathered_values = results
        if op == Average:
            gathered_values = gathered_values / size
        return torch.sparse_coo_tensor(gathered_indices.t(), gathered_values, t.size())

    return _CompositeHandle([indices, values], finish, base or "sparse_allreduce")


# ---- control -----------------------------------------------------------------------------


def barrier(process_set: ProcessSet = global_process_set) -> None:
    """Returns once every member of the set called barrier."""
    ops.barrier(process_set=process_set)


def join(device: int = -1, process_set: ProcessSet = global_process_set) -> int:
    """This rank has no more data: until every member of the set joined it contributes zeros
    to the others' allreduces on the set. Returns the last member to join (a global rank, the
    same on every member). ``device`` is accepted for Horovod's signature; hora's join does
    not need it."""
    return ops.join(process_set=process_set)


__all__ = [
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
    "grouped_allgather",
    "grouped_allgather_async",
    "grouped_allreduce",
    "grouped_allreduce_",
    "grouped_allreduce_async",
    "grouped_allreduce_async_",
    "grouped_reducescatter",
    "grouped_reducescatter_async",
    "join",
    "poll",
    "reducescatter",
    "reducescatter_async",
    "sparse_allreduce_async",
    "synchronize",
]
__all__ += reduce_ops.__all__
