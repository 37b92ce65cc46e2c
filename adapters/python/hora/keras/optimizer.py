"""hora.keras.DistributedOptimizer: any keras.optimizers.Optimizer (Keras 3, TensorFlow
backend), its gradients reduced over every rank before it applies them.

Keras's model.fit calls ``optimizer.apply(grads, variables)`` inside its tf.function
train step; the wrapper's ``apply`` reduces the gradients through hora's GradientReducer
(hora/tensorflow/gradient_reducer.py: one asynchronous op per gradient that starts its
allreduce as soon as the gradient exists, one op that waits for the step), then lets the
wrapped optimizer apply the averages. Every rank thus applies the same update, as one process
at the global batch would.

hora.keras.load_model loads a saved model and wraps its optimizer the same way, in place.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import keras
import tensorflow as tf

import hora
from hora._internal.reduce_ops import ReduceOp
from hora.compression import Compression, Compressor
from hora.tensorflow import mpi_ops
from hora.tensorflow.gradient_reducer import OpsGradientReducer


class _HoraSettings:
    """The wrapper's options and reducers (a plain object, outside Keras's tracking). Takes
    DistributedOptimizer's keywords with its defaults; those it ignores (name, device_dense,
    device_sparse, num_groups) are ignored here too."""

    def __init__(
        self,
        compression: Compressor | None = Compression.none,
        backward_passes_per_step: int = 1,
        average_aggregated_gradients: bool = False,
        op: ReduceOp | None = None,
        gradient_predivide_factor: float = 1.0,
        sparse_as_dense: bool = False,
        groups: Sequence[Sequence[keras.Variable]] | None = None,
        **_ignored: object,
    ) -> None:
        if backward_passes_per_step < 1:
            raise ValueError(f"backward_passes_per_step {backward_passes_per_step}: must be >= 1")
        op = hora.Average if op is None else op
        if op not in (hora.Average, hora.Sum):
            raise ValueError(f"op {op!r}: DistributedOptimizer reduces with Average or Sum")
        self.compression = compression
        self.k = int(backward_passes_per_step)
        self.average_aggregated = bool(average_aggregated_gradients)
        self.op = op
        self.predivide = float(gradient_predivide_factor)
        self.sparse_as_dense = bool(sparse_as_dense)
        self.groups = groups
        self.reducers: dict[tuple[int, ...], OpsGradientReducer] = {}  # by variable ids

    def reducer(self, variables: list[keras.Variable]) -> OpsGradientReducer:
        key = tuple(id(v) for v in variables)
        if key not in self.reducers:
            names = [f"{i}.{getattr(v, 'path', None) or v.name}" for i, v in enumerate(variables)]
            groups = None
            if self.groups is not None:
                index_of = {id(v): i for i, v in enumerate(variables)}
                groups = [[index_of[id(v)] for v in g if id(v) in index_of] for g in self.groups]
                groups = [g for g in groups if g]
            self.reducers[key] = OpsGradientReducer(
                names,
                op=self.op,
                compression=self.compression,
                gradient_predivide_factor=self.predivide,
                name_prefix="keras.grad/",
                groups=groups,
            )
        return self.reducers[key]


# For type checkers the mixin is a Keras optimizer (whose methods it calls through super());
# at run time a plain class, placed in front of the wrapped optimizer's class.
if TYPE_CHECKING:
    from keras.optimizers import Optimizer as _OptimizerBase
else:
    _OptimizerBase = object


class _DistributedOptimizer(_OptimizerBase):
    """Mixed into the wrapped optimizer's class (Horovod's approach), so isinstance checks,
    get_config and the optimizer's own update rule are the wrapped optimizer's."""

    _hora: _HoraSettings
    built: bool

    def _hora_reduce(
        self, grads: list[tf.Tensor | tf.IndexedSlices | None], variables: list[keras.Variable]
    ) -> list[tf.Tensor | tf.IndexedSlices | None]:
        """Every gradient reduced over the ranks (None stays None)."""
        settings = self._hora
        if hora.size() == 1 and settings.predivide == 1.0:
            return list(grads)
        grads = list(grads)
        dense = list(grads)
        sparse = {}
        for i, g in enumerate(grads):
            if isinstance(g, tf.IndexedSlices):
                if settings.sparse_as_dense:
                    dense[i] = tf.convert_to_tensor(g)
                else:
                    sparse[i] = g
                    dense[i] = None
        reduced = settings.reducer(variables).reduce(dense)
        for i, g in sparse.items():
            name = f"keras.grad.sparse/{i}.{getattr(variables[i], 'path', i)}"
            reduced[i] = mpi_ops.allreduce(g, op=settings.op, name=name, ignore_name_scope=True)
        return reduced

    def build(self, variables: list[keras.Variable]) -> None:
        super().build(variables)
        self._hora_make_accumulators(variables)

    def _hora_make_accumulators(self, variables: list[keras.Variable]) -> None:
        """The optimizer variables that hold k > 1 passes' gradients (saved with it)."""
        if self._hora.k > 1 and not getattr(self, "_hora_accumulators", None):
            self._hora_accumulators = [
                self.add_variable_from_reference(v, name="hora_accumulator") for v in variables
            ]
            self._hora_passes = self.add_variable(
                (), initializer="zeros", dtype="int64", name="hora_passes"
            )

    def apply(
        self,
        grads: list[tf.Tensor | tf.IndexedSlices | None],
        trainable_variables: Iterable[keras.Variable] | None = None,
    ) -> Any:
        grads = list(grads)
        variables = (
            list(trainable_variables)
            if trainable_variables is not None
            else list(self._trainable_variables)
        )
        if self._hora.k == 1:
            reduced = self._hora_reduce(grads, variables)
            return super().apply(reduced, trainable_variables)
        return self._hora_accumulate_and_apply(grads, variables, trainable_variables)

    def _hora_accumulate_and_apply(
        self,
        grads: list[tf.Tensor | tf.IndexedSlices | None],
        variables: list[keras.Variable],
        trainable_variables: Iterable[keras.Variable] | None,
    ) -> None:
        """Adds this pass's gradients to accumulators; every k-th pass reduces them and
        applies (divided by k with average_aggregated_gradients)."""
        if not self.built:
            with tf.name_scope(self.name):
                self.build(variables)
            self.built = True
        accumulators = [self._hora_accumulators[self._get_variable_index(v)] for v in variables]
        present = [i for i, g in enumerate(grads) if g is not None]
        for i in present:
            accumulators[i].assign_add(tf.convert_to_tensor(grads[i]))
        self._hora_passes.assign_add(1)
        scale = 1.0 / self._hora.k if self._hora.average_aggregated else 1.0
        wrapped_apply = super().apply

        def reduce_and_apply() -> tf.Tensor:
            summed = [None] * len(grads)
            for i in present:
                value = tf.convert_to_tensor(accumulators[i])
                summed[i] = value * tf.cast(scale, value.dtype) if scale != 1.0 else value
            wrapped_apply(self._hora_reduce(summed, variables), trainable_variables)
            for i in present:
                accumulators[i].assign(tf.zeros_like(accumulators[i]))
            return tf.constant(True)

        is_step = tf.equal(
            tf.math.floormod(tf.convert_to_tensor(self._hora_passes), self._hora.k), 0
        )
        if tf.executing_eagerly():
            if bool(is_step):
                reduce_and_apply()
            return None
        tf.cond(is_step, reduce_and_apply, lambda: tf.constant(False))
        return None


def _wrapped_class(cls) -> type[keras.optimizers.Optimizer]:
    """cls with the mixin in front, named and placed like cls, so that a saved model's
    optimizer config reads as the plain Keras optimizer (hora.keras.load_model re-wraps it)."""
    if issubclass(cls, _DistributedOptimizer):
        return cls
    wrapped = type(cls.__name__, (_DistributedOptimizer, cls), {})
    wrapped.__module__ = cls.__module__
    wrapped.__qualname__ = cls.__qualname__
    return wrapped


def _wrap_in_place(
    optimizer: keras.optimizers.Optimizer, settings: _HoraSettings
) -> keras.optimizers.Optimizer:
    """Makes `optimizer` itself a DistributedOptimizer, keeping its state."""
    optimizer.__class__ = _wrapped_class(type(optimizer))
    optimizer._hora = settings
    if optimizer.built:
        optimizer._hora_make_accumulators(list(optimizer._trainable_variables))
    return optimizer


def DistributedOptimizer(
    optimizer: keras.optimizers.Optimizer,
    name: str | None = None,
    device_dense: str = "",
    device_sparse: str = "",
    compression: Compressor | None = Compression.none,
    sparse_as_dense: bool = False,
    backward_passes_per_step: int = 1,
    op: ReduceOp | None = None,
    gradient_predivide_factor: float = 1.0,
    average_aggregated_gradients: bool = False,
    groups: Sequence[Sequence[keras.Variable]] | None = None,
    num_groups: int = 0,
) -> keras.optimizers.Optimizer:
    """Wraps a Keras optimizer so that ``model.compile(optimizer=DistributedOptimizer(opt))``
    and ``model.fit`` train data-parallel: each step's gradients are averaged over every rank
    (op=hora.Sum sums) before the optimizer applies them.

    - compression: hora.Compression.fp16 / bf16 put float32 gradients on the wire as 16 bits.
    - backward_passes_per_step k: gradients accumulate locally (in optimizer variables) and
      are reduced and applied every k-th step; average_aggregated_gradients divides the sum
      of the k passes by k.
    - gradient_predivide_factor f: Horovod's split of the average (sum of g/f, times f/size).
    - sparse_as_dense: densify tf.IndexedSlices gradients (embeddings) before the allreduce;
      otherwise their values and indices are allgathered.
    - groups: lists of variables reduced together as one fused unit (num_groups is accepted
      for Horovod's signature; hora fuses by size anyway).

    Returns a new optimizer of the same class (a subclass mixing in the reduction) built from
    ``optimizer.get_config()``, as Horovod does. name/device_dense/device_sparse are ignored.
    At one rank gradients are applied as they are. Not under XLA: compile the model with
    jit_compile=False (hora's ops are custom CPU kernels XLA cannot compile; Keras's "auto"
    already picks no XLA on CPU-only machines).
    """
    settings = _HoraSettings(
        compression=compression,
        backward_passes_per_step=backward_passes_per_step,
        average_aggregated_gradients=average_aggregated_gradients,
        op=op,
        gradient_predivide_factor=gradient_predivide_factor,
        sparse_as_dense=sparse_as_dense,
        groups=groups,
    )
    cls = _wrapped_class(type(optimizer))
    wrapped = cls.from_config(optimizer.get_config())
    wrapped._hora = settings
    return wrapped


def load_model(
    filepath: str | os.PathLike[str],
    custom_optimizers: Iterable[type] | None = None,
    custom_objects: Mapping[str, Any] | None = None,
    compression: Compressor | None = Compression.none,
    compile: bool = True,
    **wrapper_options: Any,
) -> keras.Model:
    """keras.models.load_model, then the compiled model's optimizer (with its restored
    state: slots, iterations, learning rate) is wrapped in place as a DistributedOptimizer
    with ``compression`` and ``wrapper_options`` (DistributedOptimizer's keywords), ready for
    ``model.fit`` to resume data-parallel training. ``custom_optimizers``: optimizer classes
    the file refers to that Keras does not know (added to custom_objects by name)."""
    objects = dict(custom_objects or {})
    for cls in custom_optimizers or []:
        objects[cls.__name__] = cls
    model = keras.models.load_model(filepath, custom_objects=objects or None, compile=compile)
    optimizer = getattr(model, "optimizer", None)
    if compile and optimizer is not None:
        _wrap_in_place(optimizer, _HoraSettings(compression=compression, **wrapper_options))
    return model


__all__ = ["DistributedOptimizer", "load_model"]
