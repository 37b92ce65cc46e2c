"""hora.keras.DistributedOptimizer: any Keras optimizer (Keras 3 with the TensorFlow backend,
or tf_keras's when tf.keras is Keras 2: hora/_internal/keras.py), its gradients reduced over
every rank of a process set (the global set by default) before it applies them.

Keras 3's model.fit calls ``optimizer.apply(grads, variables)`` inside its tf.function
train step, tf_keras's ``optimizer.apply_gradients(grads_and_vars)``; the wrapper's reduces
the gradients through hora's GradientReducer (hora/tensorflow/gradient_reducer.py: one
asynchronous op per gradient that starts its allreduce as soon as the gradient exists, one op
that waits for the step), then lets the wrapped optimizer apply the averages. Every rank thus
applies the same update, as one process at the global batch would.

hora.keras.load_model loads a saved model and wraps its optimizer the same way, in place.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import tensorflow as tf

import hora
from hora._internal.keras import keras
from hora._internal.reduce_ops import ReduceOp
from hora.compression import Compression, Compressor
from hora.process_sets import ProcessSet, global_process_set, set_id
from hora.tensorflow import mpi_ops
from hora.tensorflow.gradient_reducer import OpsGradientReducer
from hora.tensorflow.gradient_tape import local_gradient, local_layer_variables


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
        groups: Sequence[Sequence[keras.Variable]] | int | None = None,
        scale_local_gradients: bool = True,
        process_set: ProcessSet = global_process_set,
        **_ignored: object,
    ) -> None:
        set_id(process_set)  # a ValueError now for an unregistered set
        if backward_passes_per_step < 1:
            raise ValueError(f"backward_passes_per_step {backward_passes_per_step}: must be >= 1")
        op = hora.Average if op is None else op
        if op not in (hora.Average, hora.Sum, hora.Adasum):
            raise ValueError(f"op {op!r}: DistributedOptimizer reduces with Average, Sum or Adasum")
        self.compression = compression
        self.k = int(backward_passes_per_step)
        self.average_aggregated = bool(average_aggregated_gradients)
        self.op = op
        self.predivide = float(gradient_predivide_factor)
        self.sparse_as_dense = bool(sparse_as_dense)
        self.groups = None if isinstance(groups, int) else groups  # a count: fused by size
        self.scale_local = bool(scale_local_gradients)
        self.process_set = process_set
        self.local_vars: dict[int, Any] = {}  # register_local_var's, by id
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
                process_set=self.process_set,
            )
        return self.reducers[key]

    def set_size(self) -> int:
        return self.process_set.size() or 1


# For type checkers the mixin is a Keras optimizer (whose methods it calls through super());
# at run time a plain class, placed in front of the wrapped optimizer's class.
if TYPE_CHECKING:
    from keras.optimizers import Optimizer as _OptimizerBase
else:
    _OptimizerBase = object

Gradient = tf.Tensor | tf.IndexedSlices | None


class _DistributedOptimizer(_OptimizerBase):
    """Mixed into the wrapped optimizer's class (Horovod's approach), so isinstance checks,
    get_config and the optimizer's own update rule are the wrapped optimizer's. The
    generation's entry point (Keras 3's ``apply``, tf_keras's ``apply_gradients``) is in the
    subclasses below; both go through ``_hora_step``."""

    _hora: _HoraSettings

    def register_local_var(self, var: Any) -> None:
        """Horovod's: ``var``'s gradient is this rank's own, applied without an allreduce
        (divided by the set's size with scale_local_gradients, the default)."""
        self._hora.local_vars[id(var)] = var

    def _hora_reduce(self, grads: list[Gradient], variables: list[Any]) -> list[Gradient]:
        """Every gradient reduced over the set's ranks (None stays None); local variables'
        own."""
        settings = self._hora
        if settings.set_size() == 1 and settings.predivide == 1.0:
            return list(grads)
        dense = list(grads)
        sparse = {}
        local = {i for i, v in enumerate(variables) if id(v) in settings.local_vars}
        for i, g in enumerate(grads):
            if i in local:
                dense[i] = None
            elif isinstance(g, tf.IndexedSlices):
                if settings.sparse_as_dense:
                    dense[i] = tf.convert_to_tensor(g)
                else:
                    sparse[i] = g
                    dense[i] = None
        reduced = settings.reducer(variables).reduce(dense)
        for i, g in sparse.items():
            name = f"keras.grad.sparse/{i}.{getattr(variables[i], 'path', i)}"
            reduced[i] = mpi_ops.allreduce(
                g,
                op=settings.op,
                name=name,
                ignore_name_scope=True,
                process_set=settings.process_set,
            )
        for i in local:
            reduced[i] = local_gradient(grads[i], settings.scale_local, settings.set_size())
        return reduced

    def _hora_step(
        self, grads: list[Gradient], variables: list[Any], apply: Callable[[list[Gradient]], Any]
    ) -> Any:
        """Reduces and applies (``apply(reduced)``, the wrapped optimizer's own), or with
        backward_passes_per_step k > 1 accumulates and does so every k-th pass."""
        if self._hora.k == 1:
            return apply(self._hora_reduce(grads, variables))
        self._hora_accumulate_and_apply(grads, variables, apply)
        return None

    def _hora_new_accumulators(self, variables: list[Any]) -> tuple[list[Any], Any]:
        """One zero variable per model variable, and the int64 pass counter."""
        raise NotImplementedError

    def _hora_accumulators_for(self, variables: list[Any]) -> list[Any]:
        slots = self.__dict__.setdefault("_hora_slots", {})
        missing = [v for v in variables if id(v) not in slots]
        if missing or getattr(self, "_hora_passes", None) is None:
            accumulators, passes = self._hora_new_accumulators(missing)
            slots.update((id(v), a) for v, a in zip(missing, accumulators, strict=True))
            if getattr(self, "_hora_passes", None) is None:
                self._hora_passes = passes
        return [slots[id(v)] for v in variables]

    def _hora_accumulate_and_apply(
        self, grads: list[Gradient], variables: list[Any], apply: Callable[[list[Gradient]], Any]
    ) -> None:
        """Adds this pass's gradients to accumulators; every k-th pass reduces them and
        applies (divided by k with average_aggregated_gradients)."""
        accumulators = self._hora_accumulators_for(variables)
        present = [i for i, g in enumerate(grads) if g is not None]
        for i in present:
            accumulators[i].assign_add(tf.convert_to_tensor(grads[i]))
        self._hora_passes.assign_add(1)
        scale = 1.0 / self._hora.k if self._hora.average_aggregated else 1.0

        def reduce_and_apply() -> tf.Tensor:
            summed = [None] * len(grads)
            for i in present:
                value = tf.convert_to_tensor(accumulators[i])
                summed[i] = value * tf.cast(scale, value.dtype) if scale != 1.0 else value
            apply(self._hora_reduce(summed, variables))
            for i in present:
                accumulators[i].assign(tf.zeros_like(accumulators[i]))
            return tf.constant(True)

        is_step = tf.equal(
            tf.math.floormod(tf.convert_to_tensor(self._hora_passes), self._hora.k), 0
        )
        if tf.executing_eagerly():
            if bool(is_step):
                reduce_and_apply()
            return
        tf.cond(is_step, reduce_and_apply, lambda: tf.constant(False))


class _Keras3Optimizer(_DistributedOptimizer):
    """Keras 3: model.fit's train step calls ``apply(grads, variables)``."""

    built: bool

    def build(self, variables: list[Any]) -> None:
        super().build(variables)
        if self._hora.k > 1:  # created here, so they are saved with the optimizer
            self._hora_accumulators_for(list(variables))

    def _hora_new_accumulators(self, variables: list[Any]) -> tuple[list[Any], Any]:
        accumulators = [
            self.add_variable_from_reference(v, name="hora_accumulator") for v in variables
        ]
        passes = getattr(self, "_hora_passes", None)
        if passes is None:
            passes = self.add_variable((), initializer="zeros", dtype="int64", name="hora_passes")
        return accumulators, passes

    def apply(self, grads: list[Gradient], trainable_variables: Iterable[Any] | None = None) -> Any:
        variables = (
            list(trainable_variables)
            if trainable_variables is not None
            else list(self._trainable_variables)
        )
        if self._hora.k > 1 and not self.built:
            with tf.name_scope(self.name):
                self.build(variables)
            self.built = True
        wrapped_apply = super().apply
        return self._hora_step(
            list(grads), variables, lambda reduced: wrapped_apply(reduced, trainable_variables)
        )


class _TfKerasOptimizer(_DistributedOptimizer):
    """tf_keras (Keras 2; its optimizers and its legacy OptimizerV2 alike): model.fit's
    train step calls ``minimize``, which calls ``apply_gradients(grads_and_vars)``. The
    accumulators of k > 1 are plain variables attributes of the optimizer (so tracked and
    checkpointed with it), created outside any tf.function."""

    def _hora_new_accumulators(self, variables: list[Any]) -> tuple[list[Any], Any]:
        with tf.init_scope():
            accumulators = [
                tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False, name="hora_accumulator")
                for v in variables
            ]
            passes = getattr(self, "_hora_passes", None)
            if passes is None:
                passes = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="hora_passes")
        return accumulators, passes

    def apply_gradients(
        self, grads_and_vars: Iterable[tuple[Gradient, Any]], *args: Any, **kwargs: Any
    ) -> Any:
        pairs = list(grads_and_vars)
        if not pairs:
            return super().apply_gradients(pairs, *args, **kwargs)
        grads = [g for g, _ in pairs]
        variables = [v for _, v in pairs]
        wrapped_apply = super().apply_gradients
        return self._hora_step(
            grads,
            variables,
            lambda reduced: wrapped_apply(
                list(zip(reduced, variables, strict=True)), *args, **kwargs
            ),
        )


def _is_tf_keras(cls: type) -> bool:
    return any(c.__module__.split(".")[0] == "tf_keras" for c in cls.__mro__)


def _wrapped_class(cls) -> type[keras.optimizers.Optimizer]:
    """cls with the mixin in front, named and placed like cls, so that a saved model's
    optimizer config reads as the plain Keras optimizer (hora.keras.load_model re-wraps it)."""
    if issubclass(cls, _DistributedOptimizer):
        return cls
    mixin = _TfKerasOptimizer if _is_tf_keras(cls) else _Keras3Optimizer
    wrapped = type(cls.__name__, (mixin, cls), {})
    wrapped.__module__ = cls.__module__
    wrapped.__qualname__ = cls.__qualname__
    return wrapped


def _wrap_in_place(
    optimizer: keras.optimizers.Optimizer, settings: _HoraSettings
) -> keras.optimizers.Optimizer:
    """Makes `optimizer` itself a DistributedOptimizer, keeping its state."""
    optimizer.__class__ = _wrapped_class(type(optimizer))
    optimizer._hora = settings
    if settings.k > 1 and getattr(optimizer, "built", False) and not _is_tf_keras(type(optimizer)):
        optimizer._hora_accumulators_for(list(optimizer._trainable_variables))
    return optimizer


def DistributedOptimizer(
    optimizer: keras.optimizers.Optimizer,
    name: str | None = None,
    device_dense: str = "",
    device_sparse: str = "",
    compression: Compressor | None = Compression.none,
    sparse_as_dense: bool = False,
    gradient_predivide_factor: float = 1.0,
    op: ReduceOp | None = None,
    backward_passes_per_step: int = 1,
    average_aggregated_gradients: bool = False,
    num_groups: int = 0,
    groups: Sequence[Sequence[keras.Variable]] | int | None = None,
    process_set: ProcessSet = global_process_set,
    scale_local_gradients: bool = True,
) -> keras.optimizers.Optimizer:
    """Wraps a Keras optimizer so that ``model.compile(optimizer=DistributedOptimizer(opt))``
    and ``model.fit`` train data-parallel: each step's gradients are averaged over every rank
    of ``process_set`` (op=hora.Sum sums) before the optimizer applies them. Only the set's
    members may train with it; other sets may train models of their own at the same time.

    - compression: hora.Compression.fp16 / bf16 put float32 gradients on the wire as 16 bits.
    - backward_passes_per_step k: gradients accumulate locally (in optimizer variables) and
      are reduced and applied every k-th step; average_aggregated_gradients divides the sum
      of the k passes by k.
    - gradient_predivide_factor f: Horovod's split of the average (sum of g/f, times f/size).
    - sparse_as_dense: densify tf.IndexedSlices gradients (embeddings) before the allreduce;
      otherwise their values and indices are allgathered.
    - groups: lists of variables reduced together as one fused unit (num_groups, or groups as
      a number, is accepted for Horovod's signature; hora fuses by size anyway).
    - ``optimizer.register_local_var(var)``: var's gradient is not allreduced (this rank's
      own, divided by size when scale_local_gradients); PartialDistributedOptimizer
      registers whole layers.

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
        scale_local_gradients=scale_local_gradients,
        process_set=process_set,
    )
    cls = _wrapped_class(type(optimizer))
    wrapped = cls.from_config(optimizer.get_config())
    wrapped._hora = settings
    return wrapped


def PartialDistributedOptimizer(
    optimizer: keras.optimizers.Optimizer,
    name: str | None = None,
    device_dense: str = "",
    device_sparse: str = "",
    compression: Compressor | None = Compression.none,
    sparse_as_dense: bool = False,
    gradient_predivide_factor: float = 1.0,
    op: ReduceOp | None = None,
    backward_passes_per_step: int = 1,
    average_aggregated_gradients: bool = False,
    groups: Sequence[Sequence[keras.Variable]] | int | None = None,
    process_set: ProcessSet = global_process_set,
    local_layers: Any = None,
    scale_local_gradients: bool = True,
) -> keras.optimizers.Optimizer:
    """DistributedOptimizer whose ``local_layers`` (a Keras layer or a list of them) keep
    their gradients local: not allreduced, this rank's own (divided by size with
    scale_local_gradients, as Horovod does). Without local_layers it is DistributedOptimizer.
    """
    wrapped = DistributedOptimizer(
        optimizer,
        compression=compression,
        sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor,
        op=op,
        backward_passes_per_step=backward_passes_per_step,
        average_aggregated_gradients=average_aggregated_gradients,
        groups=groups,
        process_set=process_set,
        scale_local_gradients=scale_local_gradients,
    )
    for var in local_layer_variables(local_layers, keras.layers.Layer):
        wrapped.register_local_var(var)
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


__all__ = ["DistributedOptimizer", "PartialDistributedOptimizer", "load_model"]
