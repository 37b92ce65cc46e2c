"""Horovod's collectives on TensorFlow tensors (horovod.tensorflow.mpi_ops), over hora's engine.

Every collective is one asynchronous custom TensorFlow op (adapters/tensorflow/): the kernel
enqueues into hora's engine and returns its thread to TensorFlow at once; the engine's
completion callback finishes the op. The same ops run eagerly and inside ``tf.function``
(Keras's ``model.fit`` runs its train step that way), where TensorFlow's executor starts each
collective as soon as its input exists, so several are in flight together and fuse.

Names: a collective is matched across ranks by name. With ``name=None`` an op inside a
``tf.function`` takes its node name (unique in its graph, the same on every rank that builds
the same graph: Horovod's rule); an eager call without a name is numbered in call order,
which must then match on every rank. An explicit name inside a ``tf.function`` is prefixed
with the enclosing name scope unless ``ignore_name_scope=True`` (as in Horovod).

Errors: a failed collective raises, eagerly, the hora.errors class (MismatchError,
RemoteError, ...; all hora.HoraError) with hora's message naming the tensor and ranks; inside
a ``tf.function`` TensorFlow raises its own ``tf.errors.OpError`` whose message starts with
that class name ("hora.MismatchError: tensor ...").

Where hora departs from Horovod:
- the built-in compressions happen inside the engine: float32 tensors travel as
  float16/bfloat16 and are cast back on arrival; tensors of other dtypes travel
  uncompressed. A Compressor of one's own runs around allreduce and grouped_allreduce.
- op=Adasum (allreduce and grouped_allreduce of float tensors; not IndexedSlices, no gradient
  of the op itself) is hora's own algorithm; device_dense/device_sparse are accepted and ignored
  (CPU ops only: hora's TensorFlow kernels are CPU kernels, matching the tensorflow-cpu build).
- alltoall always returns ``(received, received_splits)`` (Horovod >= 0.26's form).

Process sets: every collective takes ``process_set=`` (a registered hora.ProcessSet; the
global set by default) and runs among its members only (the op's ``process_set_id`` attr, as
in Horovod). Root ranks are global ranks; results are the set's (allgather's blocks in the
order of the set's ranks, Average divides by the set's size). A rank outside the set gets
InvalidArgumentError naming the set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf
from tensorflow.python.framework import auto_control_deps as _acd
from tensorflow.types.experimental import TensorLike

import hora
from hora import _core
from hora._internal import args, reduce_ops
from hora._internal.reduce_ops import *  # noqa: F403 - Horovod's mpi_ops exports the reduce ops
from hora._internal.reduce_ops import ReduceOp
from hora._internal.tensorflow import run
from hora.compression import Compression, Compressor, user_compressor
from hora.process_sets import ProcessSet, global_process_set, process_set_by_id, set_id
from hora.tensorflow._library import ops as _ops

_SUM = int(reduce_ops.Sum)
_AVERAGE = int(reduce_ops.Average)


# The collectives whose order inside a tf.function does not matter (they are matched across
# ranks by name). Their ops are stateful (so never folded or merged, see
# adapters/tensorflow/ops.cc); TensorFlow chains stateful ops without resource inputs in
# program order, so each op here gets a private pseudo-resource (its own first output), which
# leaves it ordered only by its data: independent collectives are in flight together and fuse.
_ORDER_INSENSITIVE = frozenset(
    (
        "HoraAllreduce",
        "HoraGroupedAllreduce",
        "HoraAllgather",
        "HoraBroadcast",
        "HoraAlltoall",
        "HoraReducescatter",
        "HoraReducerGradientReady",
        "HoraReducerSynchronize",
    )
)


def _hora_collective_resolver(
    op: tf.Operation, resource_reads: set[tf.Tensor], resource_writes: set[tf.Tensor]
) -> bool:
    del resource_reads
    if op.type not in _ORDER_INSENSITIVE or not op.outputs or op.outputs[0] in resource_writes:
        return False
    resource_writes.add(op.outputs[0])
    return True


if hasattr(_acd, "register_acd_resource_resolver"):
    try:
        _acd.register_acd_resource_resolver(_hora_collective_resolver)
    except KeyError:  # registered already (the module was reloaded)
        pass


def _reduce_op(op: ReduceOp | None, average: bool | None = None) -> int:
    return int(args.reduce_op(op, average))


def _wire(dtype: tf.DType, compression: Compressor | None) -> int:
    """The op's compression attr: float32 tensors only; others travel as they are."""
    if compression is None or tf.as_dtype(dtype) != tf.float32:
        return 0
    return int(args.wire(compression))


def _naming(name: str | None, ignore_name_scope: bool = False) -> tuple[str, bool]:
    """(tensor_name, name_from_node) attrs for a collective named `name` (None: unnamed)."""
    eager = tf.executing_eagerly()
    if name is None:
        return "", not eager
    name = args.tensor_name(name)
    if not eager and not ignore_name_scope:
        scope = tf.compat.v1.get_default_graph().get_name_scope()
        if scope:
            name = f"{scope}/{name}"
    return name, False


def _set_ranks(process_set_id: int) -> list[int]:
    """The global ranks of registered set ``process_set_id``, in its order."""
    ranks = process_set_by_id(process_set_id).ranks
    return list(ranks) if ranks else list(range(hora.size()))


def _attrs(
    name: str | None, ignore_name_scope: bool, process_set: ProcessSet | None
) -> dict[str, Any]:
    """Every collective op's attrs: its naming (tensor_name, name_from_node) and set."""
    tensor_name, from_node = _naming(name, ignore_name_scope)
    return {
        "tensor_name": tensor_name,
        "name_from_node": from_node,
        "process_set_id": set_id(process_set),
    }


def _reduction_attrs(
    reduce_op: int,
    prescale_factor: float,
    postscale_factor: float,
    compression: int,
    name: str | None,
    ignore_name_scope: bool,
    process_set: ProcessSet | None,
) -> dict[str, Any]:
    """The attrs of an (grouped) allreduce op: its reduction, wire format, naming and set."""
    return {
        **_attrs(name, ignore_name_scope, process_set),
        "reduce_op": reduce_op,
        "prescale_factor": float(prescale_factor),
        "postscale_factor": float(postscale_factor),
        "compression": compression,
    }


def allreduce(
    tensor: TensorLike | tf.IndexedSlices,
    average: bool | None = None,
    device_dense: str = "",
    device_sparse: str = "",
    compression: Compressor | None = Compression.none,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
    ignore_name_scope: bool = False,
) -> tf.Tensor | tf.IndexedSlices:
    """``postscale * op(prescale * tensor)`` over the set's ranks (op: Average by default).

    A ``tf.IndexedSlices`` is gathered instead (values and indices from every rank, values
    divided by the set's size for Average), as Horovod does for sparse gradients. A
    Compressor of one's own runs around the reduction (compress before, decompress after),
    as in Horovod."""
    reduce_op = _reduce_op(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        return _sparse_allreduce(tensor, reduce_op, name, ignore_name_scope, process_set)
    tensor = tf.convert_to_tensor(tensor)
    user = user_compressor(compression)
    if user is not None:
        reduce = lambda ts, *a, **k: [allreduce(ts[0], *a, **k)]  # noqa: E731
        scales = (prescale_factor, postscale_factor)
        naming = (name, ignore_name_scope, process_set)
        return _around(user, [tensor], reduce, average, op, scales, naming)[0]
    wire = _wire(tensor.dtype, compression)
    return run(
        _ops.hora_allreduce,
        tensor,
        **_reduction_attrs(
            reduce_op, prescale_factor, postscale_factor, wire, name, ignore_name_scope, process_set
        ),
    )


def _around(
    user: Any,
    tensors: Sequence[TensorLike | tf.IndexedSlices],
    reduce: Any,
    average: bool | None,
    op: ReduceOp | None,
    scales: tuple[float, float],
    naming: tuple[str | None, bool, ProcessSet],
) -> list[tf.Tensor | tf.IndexedSlices]:
    """A user's Compressor around ``reduce`` (grouped_allreduce's signature), as Horovod runs
    one: each dense tensor's compress before, decompress after (IndexedSlices as they are).
    ``naming``: (name, ignore_name_scope, process_set)."""
    packed = [
        t if isinstance(t, tf.IndexedSlices) else user.compress(tf.convert_to_tensor(t))
        for t in tensors
    ]
    sent = [p if isinstance(p, tf.IndexedSlices) else p[0] for p in packed]
    reduced = reduce(
        sent,
        average,
        op=op,
        prescale_factor=scales[0],
        postscale_factor=scales[1],
        name=naming[0],
        ignore_name_scope=naming[1],
        process_set=naming[2],
    )
    return [
        r if isinstance(p, tf.IndexedSlices) else user.decompress(r, p[1])
        for p, r in zip(packed, reduced, strict=True)
    ]


def _sparse_allreduce(
    slices: tf.IndexedSlices,
    reduce_op: int,
    name: str | None,
    ignore_name_scope: bool,
    process_set: ProcessSet,
) -> tf.IndexedSlices:
    if reduce_op not in (_SUM, _AVERAGE):
        raise ValueError("allreduce of a tf.IndexedSlices supports op Average or Sum only")
    values_name = None if name is None else f"{name}.values"
    indices_name = None if name is None else f"{name}.indices"
    naming = {"ignore_name_scope": ignore_name_scope, "process_set": process_set}
    values = allgather(slices.values, name=values_name, **naming)
    indices = allgather(slices.indices, name=indices_name, **naming)
    if reduce_op == _AVERAGE:
        values = values / tf.cast(len(_set_ranks(set_id(process_set))), values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=slices.dense_shape)


def grouped_allreduce(
    tensors: Sequence[TensorLike | tf.IndexedSlices],
    average: bool | None = None,
    device_dense: str = "",
    device_sparse: str = "",
    compression: Compressor | None = Compression.none,
    op: ReduceOp | None = None,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
    process_set: ProcessSet = global_process_set,
    ignore_name_scope: bool = False,
    name: str | None = None,
) -> list[tf.Tensor | tf.IndexedSlices]:
    """Allreduces a list of tensors over the set's ranks as one unit (fused together);
    returns the list.

    Members are named ``<name>.<i>``. Members of one dtype form one fused unit (with several
    dtypes, the units after the first are named ``<name>.<dtype>``); compression applies to
    the float32 unit only, a Compressor of one's own to every dense member."""
    user = user_compressor(compression)
    if user is not None:
        scales = (prescale_factor, postscale_factor)
        naming = (name, ignore_name_scope, process_set)
        return _around(user, tensors, grouped_allreduce, average, op, scales, naming)
    tensors = list(tensors)
    reduce_op = _reduce_op(op, average)
    results = [None] * len(tensors)
    dense = []
    for i, t in enumerate(tensors):
        if isinstance(t, tf.IndexedSlices):
            member = None if name is None else f"{name}.{i}"
            results[i] = _sparse_allreduce(t, reduce_op, member, ignore_name_scope, process_set)
        else:
            dense.append((i, tf.convert_to_tensor(t)))
    if not dense:
        return results
    # One fused unit per dtype: the engine fuses a group of mixed dtypes wrongly today (a
    # member of the second dtype can come back unreduced), so hora.tensorflow never asks it to.
    parts: dict[tf.DType, list[tuple[int, tf.Tensor]]] = {}
    for i, t in dense:
        parts.setdefault(t.dtype, []).append((i, t))
    for part, (dtype, members) in enumerate(parts.items()):
        part_name = name if name is None or part == 0 else f"{name}.{dtype.name}"
        wire = _wire(dtype, compression)
        reduced = run(
            _ops.hora_grouped_allreduce,
            [t for _, t in members],
            **_reduction_attrs(
                reduce_op,
                prescale_factor,
                postscale_factor,
                wire,
                part_name,
                ignore_name_scope,
                process_set,
            ),
        )
        for (i, _), r in zip(members, reduced, strict=True):
            results[i] = r
    return results


def allgather(
    tensor: TensorLike,
    name: str | None = None,
    ignore_name_scope: bool = False,
    process_set: ProcessSet = global_process_set,
) -> tf.Tensor:
    """Every set member's tensor concatenated along the first dimension (which may differ),
    in the order of the set's ranks."""
    return run(
        _ops.hora_allgather,
        tf.convert_to_tensor(tensor),
        **_attrs(name, ignore_name_scope, process_set),
    )


def broadcast(
    tensor: TensorLike,
    root_rank: int,
    name: str | None = None,
    ignore_name_scope: bool = False,
    process_set: ProcessSet = global_process_set,
) -> tf.Tensor:
    """root_rank's tensor (a global rank, a member of the set), on every member of the set."""
    return run(
        _ops.hora_broadcast,
        tf.convert_to_tensor(tensor),
        root_rank=int(root_rank),
        **_attrs(name, ignore_name_scope, process_set),
    )


def alltoall(
    tensor: TensorLike,
    splits: TensorLike | None = None,
    name: str | None = None,
    ignore_name_scope: bool = False,
    process_set: ProcessSet = global_process_set,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Sends ``splits[p]`` first-dimension rows to the set's p-th rank (None: an even split)
    and returns ``(received, received_splits)``: the rows from every member in the set's
    order, and how many came from each."""
    if splits is None:
        splits = tf.zeros([0], dtype=tf.int64)
    splits = tf.cast(tf.convert_to_tensor(splits), tf.int64)
    received, received_splits = run(
        _ops.hora_alltoall,
        tf.convert_to_tensor(tensor),
        splits,
        **_attrs(name, ignore_name_scope, process_set),
    )
    return received, received_splits


def reducescatter(
    tensor: TensorLike,
    device_dense: str = "",
    compression: Compressor | None = Compression.none,
    op: ReduceOp | None = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
    ignore_name_scope: bool = False,
    prescale_factor: float = 1.0,
    postscale_factor: float = 1.0,
) -> tf.Tensor:
    """This rank's block of ``postscale_factor * op(prescale_factor * tensor)`` over the set,
    along the first dimension (the set's first rows % size members get one row more). op:
    Average (default) or Sum, Min, Max, Product. compression is accepted for Horovod's
    signature; reducescatter travels uncompressed."""
    return run(
        _ops.hora_reducescatter,
        tf.convert_to_tensor(tensor),
        reduce_op=_reduce_op(op),
        prescale_factor=float(prescale_factor),
        postscale_factor=float(postscale_factor),
        **_attrs(name, ignore_name_scope, process_set),
    )


def join(process_set: ProcessSet = global_process_set) -> int | tf.Tensor:
    """This rank has no more data. Until every member of the set joined, it contributes zeros
    to the others' allreduces. Returns the last rank (global) to join (eagerly an int, else a
    tensor)."""
    last = run(_ops.hora_join, process_set_id=set_id(process_set))
    return int(last) if tf.executing_eagerly() else last


def barrier(process_set: ProcessSet = global_process_set) -> tf.Operation | None:
    """Returns once every member of the set called barrier (eagerly; inside a tf.function it
    is an op)."""
    return run(_ops.hora_barrier, process_set_id=set_id(process_set))


# Gradients, as in Horovod. The global loss is the sum of the ranks' losses, each rank
# holding its own copy of every collective's output. A gradient runs on its forward op's set.


def _grad_attrs(op: tf.Operation) -> dict[str, Any]:
    """A gradient op's naming (eagerly '<forward name>.grad' or numbered, else its node) and
    its forward op's set."""
    if tf.executing_eagerly():
        forward = op.get_attr("tensor_name")
        tensor_name, from_node = (f"{forward}.grad" if forward else ""), False
    else:
        tensor_name, from_node = "", True
    return {
        "tensor_name": tensor_name,
        "name_from_node": from_node,
        "process_set_id": op.get_attr("process_set_id"),
    }


def _check_differentiable(reduce_op: int, what: str) -> None:
    if reduce_op not in (_SUM, _AVERAGE):
        raise ValueError(
            f"{what} with op {_core.ReduceOp(reduce_op).name} has no "
            "gradient (only Average and Sum do)"
        )


def _reduction_grad_attrs(op: tf.Operation, what: str) -> dict[str, Any]:
    """The attrs of an (grouped) allreduce's gradient op: the forward op's reduction, applied
    to the output gradients (only Average and Sum have a gradient)."""
    reduce_op = op.get_attr("reduce_op")
    _check_differentiable(reduce_op, what)
    return {
        "reduce_op": reduce_op,
        "prescale_factor": op.get_attr("prescale_factor"),
        "postscale_factor": op.get_attr("postscale_factor"),
        **_grad_attrs(op),
    }


def _sum_over_ranks(grad: tf.Tensor, attrs: dict[str, Any]) -> tf.Tensor:
    """The sum of every set member's ``grad``, by an allreduce with a gradient op's attrs."""
    return _ops.hora_allreduce(tf.convert_to_tensor(grad), reduce_op=_SUM, **attrs)


@tf.RegisterGradient("HoraAllreduce")
def _allreduce_grad(op: tf.Operation, grad: tf.Tensor) -> tf.Tensor:
    return _ops.hora_allreduce(grad, **_reduction_grad_attrs(op, "allreduce"))


@tf.RegisterGradient("HoraGroupedAllreduce")
def _grouped_allreduce_grad(op: tf.Operation, *grads: tf.Tensor | None) -> list[tf.Tensor]:
    dense = [
        tf.zeros_like(x) if g is None else tf.convert_to_tensor(g)
        for x, g in zip(op.inputs, grads, strict=True)
    ]
    return _ops.hora_grouped_allreduce(dense, **_reduction_grad_attrs(op, "grouped_allreduce"))


@tf.RegisterGradient("HoraAllgather")
def _allgather_grad(op: tf.Operation, grad: tf.Tensor) -> tf.Tensor:
    # Sum every member's gradient of the gathered tensor, then keep this rank's rows.
    attrs = _grad_attrs(op)
    grad = _sum_over_ranks(grad, attrs)
    rows = tf.shape(op.inputs[0], out_type=tf.int64)[0:1]
    rows_attrs = dict(attrs)
    if attrs["tensor_name"]:
        rows_attrs["tensor_name"] = f"{attrs['tensor_name']}.rows"
    all_rows = _ops.hora_allgather(rows, **rows_attrs)
    position = _set_ranks(attrs["process_set_id"]).index(hora.rank())
    begin = tf.reduce_sum(all_rows[:position])
    return grad[begin : begin + rows[0]]


@tf.RegisterGradient("HoraBroadcast")
def _broadcast_grad(op: tf.Operation, grad: tf.Tensor) -> tf.Tensor:
    # Only the root's input reaches the outputs: it gets every member's gradient, summed.
    summed = _sum_over_ranks(grad, _grad_attrs(op))
    if hora.rank() != op.get_attr("root_rank"):
        return tf.zeros_like(summed)
    return summed


@tf.RegisterGradient("HoraAlltoall")
def _alltoall_grad(
    op: tf.Operation, grad: tf.Tensor, _grad_splits: tf.Tensor
) -> tuple[tf.Tensor, None]:
    # The rows go back where they came from.
    back, _ = _ops.hora_alltoall(tf.convert_to_tensor(grad), op.outputs[1], **_grad_attrs(op))
    return back, None


@tf.RegisterGradient("HoraReducescatter")
def _reducescatter_grad(op: tf.Operation, grad: tf.Tensor) -> tf.Tensor:
    reduce_op = op.get_attr("reduce_op")
    _check_differentiable(reduce_op, "reducescatter")
    attrs = _grad_attrs(op)
    gathered = _ops.hora_allgather(tf.convert_to_tensor(grad), **attrs)
    if reduce_op == _AVERAGE:
        set_size = len(_set_ranks(attrs["process_set_id"]))
        gathered = gathered / tf.cast(set_size, gathered.dtype)
    scale = op.get_attr("prescale_factor") * op.get_attr("postscale_factor")
    if scale != 1.0:
        gathered = gathered * tf.cast(scale, gathered.dtype)
    return gathered


tf.no_gradient("HoraBarrier")
tf.no_gradient("HoraJoin")
tf.no_gradient("HoraReducerGradientReady")
tf.no_gradient("HoraReducerSynchronize")


__all__ = [
    "allgather",
    "allreduce",
    "alltoall",
    "barrier",
    "broadcast",
    "grouped_allreduce",
    "join",
    "reducescatter",
]
__all__ += reduce_ops.__all__
