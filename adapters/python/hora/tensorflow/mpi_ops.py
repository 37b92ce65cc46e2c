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
- compression happens inside the engine: float32 tensors travel as float16/bfloat16 and are
  cast back on arrival; tensors of other dtypes travel uncompressed.
- op=Adasum raises UnimplementedError; process sets are not supported (every collective
  spans the job); device_dense/device_sparse are accepted and ignored (CPU ops only: hora's
  TensorFlow kernels are CPU kernels, matching the tensorflow-cpu build).
- alltoall always returns ``(received, received_splits)`` (Horovod >= 0.26's form).
- join() and barrier() take no process set.
"""

from __future__ import annotations

import re

import tensorflow as tf
from tensorflow.python.framework import auto_control_deps as _acd

import hora
from hora import errors as _errors
from hora.compression import Compression
from hora.tensorflow._library import ops as _ops

Average = hora.Average
Sum = hora.Sum
Min = hora.Min
Max = hora.Max
Product = hora.Product
Adasum = hora.Adasum

_SUM = int(hora.Sum)
_AVERAGE = int(hora.Average)
_HORA_ERROR = re.compile(r"hora\.(\w+Error): ")
_TF_SUFFIX = re.compile(r"\s*\[Op:\w+\]( name: .*)?$", re.S)


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


def _hora_collective_resolver(op, resource_reads, resource_writes):
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


def _reduce_op(op, average=None):
    return int(hora.ops._op(op, average))


def _wire(dtype, compression):
    """The op's compression attr: float32 tensors only; others travel as they are."""
    if compression is None or tf.as_dtype(dtype) != tf.float32:
        return 0
    return int(hora.ops._compression(compression))


def _naming(name, ignore_name_scope=False):
    """(tensor_name, name_from_node) attrs for a collective named `name` (None: unnamed)."""
    eager = tf.executing_eagerly()
    if name is None:
        return "", not eager
    name = hora.ops._name(name)
    if not eager and not ignore_name_scope:
        scope = tf.compat.v1.get_default_graph().get_name_scope()
        if scope:
            name = f"{scope}/{name}"
    return name, False


def _translated(error):
    """The hora.errors exception an op's error message names, or None."""
    match = _HORA_ERROR.search(error.message)
    cls = getattr(_errors, match.group(1), None) if match else None
    if cls is None or not isinstance(cls, type) or not issubclass(cls, _errors.HoraError):
        return None
    return cls(_TF_SUFFIX.sub("", error.message[match.end() :]))


def _run(fn, *args, **kwargs):
    """Runs an op wrapper; eagerly, a hora error becomes its hora.errors class."""
    if not tf.executing_eagerly():
        return fn(*args, **kwargs)
    try:
        return fn(*args, **kwargs)
    except tf.errors.OpError as e:
        hora_error = _translated(e)
        if hora_error is None:
            raise
        raise hora_error from e


def allreduce(
    tensor,
    average=None,
    device_dense="",
    device_sparse="",
    compression=Compression.none,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    name=None,
    ignore_name_scope=False,
):
    """``postscale * op(prescale * tensor)`` over every rank (op: Average by default).

    A ``tf.IndexedSlices`` is gathered instead (values and indices from every rank, values
    divided by size for Average), as Horovod does for sparse gradients."""
    reduce_op = _reduce_op(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        return _sparse_allreduce(tensor, reduce_op, name, ignore_name_scope)
    tensor = tf.convert_to_tensor(tensor)
    tensor_name, from_node = _naming(name, ignore_name_scope)
    return _run(
        _ops.hora_allreduce,
        tensor,
        reduce_op=reduce_op,
        prescale_factor=float(prescale_factor),
        postscale_factor=float(postscale_factor),
        compression=_wire(tensor.dtype, compression),
        tensor_name=tensor_name,
        name_from_node=from_node,
    )


def _sparse_allreduce(slices, reduce_op, name, ignore_name_scope):
    if reduce_op not in (_SUM, _AVERAGE):
        raise ValueError("allreduce of a tf.IndexedSlices supports op Average or Sum only")
    values_name = None if name is None else f"{name}.values"
    indices_name = None if name is None else f"{name}.indices"
    values = allgather(slices.values, name=values_name, ignore_name_scope=ignore_name_scope)
    indices = allgather(slices.indices, name=indices_name, ignore_name_scope=ignore_name_scope)
    if reduce_op == _AVERAGE:
        values = values / tf.cast(hora.size(), values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=slices.dense_shape)


def grouped_allreduce(
    tensors,
    average=None,
    device_dense="",
    device_sparse="",
    compression=Compression.none,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    name=None,
    ignore_name_scope=False,
):
    """Allreduces a list of tensors as one unit (fused together); returns the list.

    Members are named ``<name>.<i>``. Members of one dtype form one fused unit (with several
    dtypes, the units after the first are named ``<name>.<dtype>``); compression applies to
    the float32 unit only."""
    tensors = list(tensors)
    reduce_op = _reduce_op(op, average)
    results = [None] * len(tensors)
    dense = []
    for i, t in enumerate(tensors):
        if isinstance(t, tf.IndexedSlices):
            member = None if name is None else f"{name}.{i}"
            results[i] = _sparse_allreduce(t, reduce_op, member, ignore_name_scope)
        else:
            dense.append((i, tf.convert_to_tensor(t)))
    if not dense:
        return results
    # One fused unit per dtype: the engine fuses a group of mixed dtypes wrongly today (a
    # member of the second dtype can come back unreduced), so hora.tensorflow never asks it to.
    parts = {}
    for i, t in dense:
        parts.setdefault(t.dtype, []).append((i, t))
    for part, (dtype, members) in enumerate(parts.items()):
        part_name = name if name is None or part == 0 else f"{name}.{dtype.name}"
        tensor_name, from_node = _naming(part_name, ignore_name_scope)
        reduced = _run(
            _ops.hora_grouped_allreduce,
            [t for _, t in members],
            reduce_op=reduce_op,
            prescale_factor=float(prescale_factor),
            postscale_factor=float(postscale_factor),
            compression=_wire(dtype, compression),
            tensor_name=tensor_name,
            name_from_node=from_node,
        )
        for (i, _), r in zip(members, reduced, strict=True):
            results[i] = r
    return results


def allgather(tensor, name=None, ignore_name_scope=False):
    """Every rank's tensor concatenated along the first dimension (which may differ)."""
    tensor_name, from_node = _naming(name, ignore_name_scope)
    return _run(
        _ops.hora_allgather,
        tf.convert_to_tensor(tensor),
        tensor_name=tensor_name,
        name_from_node=from_node,
    )


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False):
    """root_rank's tensor, on every rank."""
    tensor_name, from_node = _naming(name, ignore_name_scope)
    return _run(
        _ops.hora_broadcast,
        tf.convert_to_tensor(tensor),
        root_rank=int(root_rank),
        tensor_name=tensor_name,
        name_from_node=from_node,
    )


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False):
    """Sends ``splits[p]`` first-dimension rows to rank p (None: an even split) and returns
    ``(received, received_splits)``: the rows from every rank in rank order, and how many
    came from each."""
    if splits is None:
        splits = tf.zeros([0], dtype=tf.int64)
    splits = tf.cast(tf.convert_to_tensor(splits), tf.int64)
    tensor_name, from_node = _naming(name, ignore_name_scope)
    received, received_splits = _run(
        _ops.hora_alltoall,
        tf.convert_to_tensor(tensor),
        splits,
        tensor_name=tensor_name,
        name_from_node=from_node,
    )
    return received, received_splits


def reducescatter(
    tensor,
    device_dense="",
    compression=Compression.none,
    op=None,
    name=None,
    ignore_name_scope=False,
):
    """This rank's block of the reduction along the first dimension (the first rows % size
    ranks get one row more). op: Average (default) or Sum, Min, Max, Product. compression is
    accepted for Horovod's signature; reducescatter travels uncompressed."""
    tensor_name, from_node = _naming(name, ignore_name_scope)
    return _run(
        _ops.hora_reducescatter,
        tf.convert_to_tensor(tensor),
        reduce_op=_reduce_op(op),
        tensor_name=tensor_name,
        name_from_node=from_node,
    )


def join():
    """This rank has no more data. Until every rank joined, it contributes zeros to the
    others' allreduces. Returns the last rank to join (eagerly an int, else a tensor)."""
    last = _run(_ops.hora_join)
    return int(last) if tf.executing_eagerly() else last


def barrier():
    """Returns once every rank called barrier (eagerly; inside a tf.function it is an op)."""
    return _run(_ops.hora_barrier)


# Gradients, as in Horovod. The global loss is the sum of the ranks' losses, each rank
# holding its own copy of every collective's output.


def _grad_naming(op):
    """A gradient op's naming: eagerly '<forward name>.grad' (or numbered), else its node."""
    if tf.executing_eagerly():
        forward = op.get_attr("tensor_name")
        return (f"{forward}.grad" if forward else ""), False
    return "", True


def _check_differentiable(reduce_op, what):
    if reduce_op not in (_SUM, _AVERAGE):
        raise ValueError(
            f"{what} with op {hora.ops._core.ReduceOp(reduce_op).name} has no "
            "gradient (only Average and Sum do)"
        )


@tf.RegisterGradient("HoraAllreduce")
def _allreduce_grad(op, grad):
    reduce_op = op.get_attr("reduce_op")
    _check_differentiable(reduce_op, "allreduce")
    tensor_name, from_node = _grad_naming(op)
    return _ops.hora_allreduce(
        grad,
        reduce_op=reduce_op,
        prescale_factor=op.get_attr("prescale_factor"),
        postscale_factor=op.get_attr("postscale_factor"),
        tensor_name=tensor_name,
        name_from_node=from_node,
    )


@tf.RegisterGradient("HoraGroupedAllreduce")
def _grouped_allreduce_grad(op, *grads):
    reduce_op = op.get_attr("reduce_op")
    _check_differentiable(reduce_op, "grouped_allreduce")
    grads = [
        tf.zeros_like(x) if g is None else tf.convert_to_tensor(g)
        for x, g in zip(op.inputs, grads, strict=True)
    ]
    tensor_name, from_node = _grad_naming(op)
    return _ops.hora_grouped_allreduce(
        grads,
        reduce_op=reduce_op,
        prescale_factor=op.get_attr("prescale_factor"),
        postscale_factor=op.get_attr("postscale_factor"),
        tensor_name=tensor_name,
        name_from_node=from_node,
    )


@tf.RegisterGradient("HoraAllgather")
def _allgather_grad(op, grad):
    # Sum every rank's gradient of the gathered tensor, then keep this rank's rows.
    tensor_name, from_node = _grad_naming(op)
    grad = _ops.hora_allreduce(
        tf.convert_to_tensor(grad),
        reduce_op=_SUM,
        tensor_name=tensor_name,
        name_from_node=from_node,
    )
    rows = tf.shape(op.inputs[0], out_type=tf.int64)[0:1]
    rows_name = f"{tensor_name}.rows" if tensor_name else ""
    all_rows = _ops.hora_allgather(rows, tensor_name=rows_name, name_from_node=from_node)
    begin = tf.reduce_sum(all_rows[: hora.rank()])
    return grad[begin : begin + rows[0]]


@tf.RegisterGradient("HoraBroadcast")
def _broadcast_grad(op, grad):
    # Only the root's input reaches the outputs: it gets every rank's gradient, summed.
    tensor_name, from_node = _grad_naming(op)
    summed = _ops.hora_allreduce(
        tf.convert_to_tensor(grad),
        reduce_op=_SUM,
        tensor_name=tensor_name,
        name_from_node=from_node,
    )
    if hora.rank() != op.get_attr("root_rank"):
        return tf.zeros_like(summed)
    return summed


@tf.RegisterGradient("HoraAlltoall")
def _alltoall_grad(op, grad, _grad_splits):
    # The rows go back where they came from.
    tensor_name, from_node = _grad_naming(op)
    back, _ = _ops.hora_alltoall(
        tf.convert_to_tensor(grad), op.outputs[1], tensor_name=tensor_name, name_from_node=from_node
    )
    return back, None


@tf.RegisterGradient("HoraReducescatter")
def _reducescatter_grad(op, grad):
    reduce_op = op.get_attr("reduce_op")
    _check_differentiable(reduce_op, "reducescatter")
    tensor_name, from_node = _grad_naming(op)
    gathered = _ops.hora_allgather(
        tf.convert_to_tensor(grad), tensor_name=tensor_name, name_from_node=from_node
    )
    if reduce_op == _AVERAGE:
        gathered = gathered / tf.cast(hora.size(), gathered.dtype)
    return gathered


tf.no_gradient("HoraBarrier")
tf.no_gradient("HoraJoin")
tf.no_gradient("HoraReducerGradientReady")
tf.no_gradient("HoraReducerSynchronize")
