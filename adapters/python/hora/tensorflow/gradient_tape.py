"""DistributedGradientTape (horovod.tensorflow.DistributedGradientTape): a tf.GradientTape
whose gradient() returns the gradients averaged over every rank of a process set (the global
set by default)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from hora._internal.args import reduce_op
from hora._internal.reduce_ops import Average, ReduceOp, Sum
from hora.compression import Compression, Compressor
from hora.process_sets import ProcessSet, global_process_set, set_id
from hora.tensorflow import mpi_ops


def _source_name(i: int, source: tf.Variable) -> str:
    path = getattr(source, "path", None) or getattr(source, "name", None) or ""
    return f"{i}.{path}" if path else str(i)


class _DistributedGradientTape:
    """Wraps a tf.GradientTape; everything but gradient() goes to the wrapped tape."""

    def __init__(
        self,
        tape: tf.GradientTape,
        compression: Compressor | None,
        sparse_as_dense: bool,
        op: ReduceOp | None,
        gradient_predivide_factor: float,
        num_groups: int,
        groups: Sequence[Sequence[tf.Variable]] | None,
        scale_local_gradients: bool = True,
        process_set: ProcessSet = global_process_set,
    ) -> None:
        set_id(process_set)  # a ValueError now for an unregistered set
        self._process_set = process_set
        self._tape = tape
        self._local_sources: dict[int, tf.Variable] = {}  # register_local_source's, by id
        self._scale_local = bool(scale_local_gradients)
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._op = reduce_op(op)
        if gradient_predivide_factor != 1.0 and self._op != Average:
            raise ValueError("gradient_predivide_factor != 1 needs op=Average")
        if gradient_predivide_factor <= 0:
            raise ValueError(f"gradient_predivide_factor {gradient_predivide_factor}: must be > 0")
        self._predivide = float(gradient_predivide_factor)
        if num_groups and groups is not None:
            raise ValueError("pass num_groups or groups, not both")
        if num_groups < 0:
            raise ValueError(f"num_groups {num_groups}: must be >= 0")
        self._num_groups = int(num_groups)
        self._groups = groups

    def __enter__(self) -> _DistributedGradientTape:
        self._tape.__enter__()
        return self

    def __exit__(self, *exc: object) -> bool | None:
        return self._tape.__exit__(*exc)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._tape, attr)

    def register_local_source(self, source: tf.Variable) -> None:
        """Horovod's: ``source``'s gradient is this rank's own, returned without an
        allreduce (divided by the set's size with scale_local_gradients, the default)."""
        self._local_sources[id(source)] = source

    def gradient(
        self,
        target: Any,
        sources: Any,
        output_gradients: Any = None,
        unconnected_gradients: tf.UnconnectedGradients = tf.UnconnectedGradients.NONE,
    ) -> Any:
        """The wrapped tape's gradients, reduced over the set's ranks (averaged by default).
        None gradients stay None (they must be None on every rank)."""
        grads = self._tape.gradient(target, sources, output_gradients, unconnected_gradients)
        flat_sources = tf.nest.flatten(sources)
        flat_grads = tf.nest.flatten(grads, expand_composites=False)
        reduced = self.reduce_gradients(flat_grads, flat_sources)
        return tf.nest.pack_sequence_as(grads, reduced, expand_composites=False)

    def reduce_gradients(
        self, grads: list[tf.Tensor | tf.IndexedSlices | None], sources: list[tf.Variable]
    ) -> list[tf.Tensor | tf.IndexedSlices | None]:
        """``grads`` (one per source) reduced as gradient() reduces them: the local sources'
        kept, the others reduced over the set's ranks (hora.tensorflow.DistributedOptimizer's
        TensorFlow 1 wrapper reduces through this too)."""
        local = [i for i, s in enumerate(sources) if id(s) in self._local_sources]
        shared = [None if i in local else g for i, g in enumerate(grads)]
        reduced = self._reduce(shared, sources)
        for i in local:
            reduced[i] = local_gradient(grads[i], self._scale_local, self._set_size())
        return reduced

    def _set_size(self) -> int:
        return self._process_set.size() or 1

    def _scales(self) -> tuple[ReduceOp, float, float]:
        if self._predivide != 1.0:  # Horovod's split: sum of g / f, then times f / size
            return Sum, 1.0 / self._predivide, self._predivide / self._set_size()
        return self._op, 1.0, 1.0

    def _reduce(
        self, grads: list[tf.Tensor | tf.IndexedSlices | None], sources: list[tf.Variable]
    ) -> list[tf.Tensor | tf.IndexedSlices | None]:
        if self._set_size() == 1 and self._predivide == 1.0:
            return [
                tf.convert_to_tensor(g)
                if self._sparse_as_dense and isinstance(g, tf.IndexedSlices)
                else g
                for g in grads
            ]
        op, prescale, postscale = self._scales()
        out = list(grads)
        present = []
        for i, g in enumerate(grads):
            if g is None:
                continue
            if isinstance(g, tf.IndexedSlices) and self._sparse_as_dense:
                g = tf.convert_to_tensor(g)
            if isinstance(g, tf.IndexedSlices):
                name = f"tape.sparse.{_source_name(i, sources[i])}"
                out[i] = mpi_ops.allreduce(
                    g,
                    op=op if self._predivide == 1.0 else Average,
                    name=name,
                    ignore_name_scope=True,
                    process_set=self._process_set,
                )
            else:
                present.append((i, g))
        for group_no, members in enumerate(self._partition(present, sources)):
            reduced = mpi_ops.grouped_allreduce(
                [g for _, g in members],
                op=op,
                prescale_factor=prescale,
                postscale_factor=postscale,
                compression=self._compression,
                name=f"tape.group{group_no}" if tf.executing_eagerly() else None,
                process_set=self._process_set,
            )
            for (i, _), r in zip(members, reduced, strict=True):
                out[i] = r
        return out

    def _partition(
        self, present: list[tuple[int, tf.Tensor]], sources: list[tf.Variable]
    ) -> list[list[tuple[int, tf.Tensor]]]:
        """The groups the dense gradients are reduced in: one by default, num_groups of
        about equal count, or the caller's groups (lists of variables)."""
        if not present:
            return []
        if self._groups is not None:
            index_of = {id(s): i for i, s in enumerate(sources)}
            by_index = dict(present)
            chosen: set[int] = set()
            groups: list[list[tuple[int, tf.Tensor]]] = []
            for group in self._groups:
                members = [
                    (index_of[id(v)], by_index[index_of[id(v)]])
                    for v in group
                    if id(v) in index_of and index_of[id(v)] in by_index
                ]
                chosen.update(i for i, _ in members)
                if members:
                    groups.append(members)
            groups += [[m] for m in present if m[0] not in chosen]
            return groups
        if self._num_groups > 0:
            n = min(self._num_groups, len(present))
            size = -(-len(present) // n)
            return [present[k : k + size] for k in range(0, len(present), size)]
        return [present]


def DistributedGradientTape(
    gradtape: tf.GradientTape,
    device_dense: str = "",
    device_sparse: str = "",
    compression: Compressor | None = Compression.none,
    sparse_as_dense: bool = False,
    op: ReduceOp | None = None,
    gradient_predivide_factor: float = 1.0,
    num_groups: int = 0,
    groups: Sequence[Sequence[tf.Variable]] | None = None,
    process_set: ProcessSet = global_process_set,
    scale_local_gradients: bool = True,
) -> _DistributedGradientTape:
    """Wraps ``gradtape`` so that ``gradient()`` returns gradients reduced over the ranks of
    ``process_set`` (every rank by default; only its members may call gradient()):

        with tf.GradientTape() as tape:
            loss = ...
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)   # averaged over ranks

    Dense gradients go in one grouped allreduce (fused) per call, or in ``num_groups``
    groups, or in the caller's ``groups`` (lists of variables). A sparse gradient
    (tf.IndexedSlices) is allgathered (values and indices), or densified first with
    ``sparse_as_dense=True``. ``gradient_predivide_factor`` f splits the average as Horovod
    does: sum of g/f, then times f/size (the set's size). device_dense/device_sparse are
    ignored (hora's TensorFlow ops run on the CPU). In a set of one rank the gradients are
    returned as they are.
    ``tape.register_local_source(var)``: var's gradient stays this rank's own (divided by
    size with ``scale_local_gradients``, Horovod's default).
    """
    return _DistributedGradientTape(
        gradtape,
        compression,
        sparse_as_dense,
        Average if op is None else op,
        gradient_predivide_factor,
        num_groups,
        groups,
        scale_local_gradients,
        process_set,
    )


def local_gradient(grad: tf.Tensor | tf.IndexedSlices | None, scale: bool, size: int) -> Any:
    """A local variable's gradient: its own, divided by ``size`` (the set's) when ``scale``
    (Horovod's scale_local_gradients, so that it weighs as an averaged one would)."""
    if grad is None or not scale or size == 1:
        return grad
    if isinstance(grad, tf.IndexedSlices):
        values = grad.values / tf.cast(size, grad.values.dtype)
        return tf.IndexedSlices(values, grad.indices, grad.dense_shape)
    return grad / tf.cast(size, grad.dtype)


def local_layer_variables(local_layers: Any, layer_type: type | None = None) -> list[Any]:
    """The trainable variables of ``local_layers`` (None, one Keras layer or a list of
    them); a ValueError names anything that is not a layer."""
    if local_layers is None:
        return []
    if hasattr(local_layers, "trainable_weights"):
        local_layers = [local_layers]
    for layer in local_layers:
        is_layer = hasattr(layer, "trainable_weights") and (
            layer_type is None or isinstance(layer, layer_type)
        )
        if not is_layer:
            raise ValueError(f"local_layers: {layer!r} is not a Keras layer")
    return [var for layer in local_layers for var in layer.trainable_weights]


def PartialDistributedGradientTape(
    gradtape: tf.GradientTape,
    device_dense: str = "",
    device_sparse: str = "",
    compression: Compressor | None = Compression.none,
    sparse_as_dense: bool = False,
    op: ReduceOp | None = None,
    gradient_predivide_factor: float = 1.0,
    num_groups: int = 0,
    groups: Sequence[Sequence[tf.Variable]] | None = None,
    process_set: ProcessSet = global_process_set,
    local_layers: Any = None,
    scale_local_gradients: bool = True,
) -> _DistributedGradientTape:
    """DistributedGradientTape whose ``local_layers`` (a Keras layer or a list of them) keep
    their gradients local: not allreduced, this rank's own (divided by size with
    scale_local_gradients, as Horovod does). Without local_layers it is
    DistributedGradientTape."""
    tape = DistributedGradientTape(
        gradtape,
        device_dense,
        device_sparse,
        compression,
        sparse_as_dense,
        op,
        gradient_predivide_factor,
        num_groups,
        groups,
        process_set,
        scale_local_gradients,
    )
    for var in local_layer_variables(local_layers):
        tape.register_local_source(var)
    return tape


__all__ = ["DistributedGradientTape", "PartialDistributedGradientTape"]
