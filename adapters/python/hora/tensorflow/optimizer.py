"""hora.tensorflow.DistributedOptimizer (horovod.tensorflow.DistributedOptimizer): wraps a
Keras optimizer (hora.keras.DistributedOptimizer, of the generation tf.keras resolves to) or
a TensorFlow 1 ``tf.compat.v1.train.Optimizer``, whose compute_gradients then returns the
gradients reduced over every rank, as Horovod's does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from hora import errors
from hora._internal.reduce_ops import Average, ReduceOp
from hora.compression import Compression, Compressor
from hora.process_sets import ProcessSet, global_process_set
from hora.tensorflow.gradient_tape import DistributedGradientTape


class _DistributedOptimizerV1(tf.compat.v1.train.Optimizer):
    """A tf.compat.v1.train.Optimizer around another: compute_gradients reduces (through
    DistributedGradientTape's reduction, so with its options and local sources); everything
    else is the wrapped optimizer's."""

    def __init__(self, optimizer: Any, name: str | None, use_locking: bool, **options: Any):
        super().__init__(
            name=name or f"Distributed{type(optimizer).__name__}", use_locking=use_locking
        )
        self._optimizer = optimizer
        self._reducer = DistributedGradientTape(None, **options)

    def register_local_var(self, var: tf.Variable) -> None:
        """var's gradient is this rank's own (divided by size with scale_local_gradients)."""
        self._reducer.register_local_source(var)

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list[tuple[Any, Any]]:
        pairs = self._optimizer.compute_gradients(*args, **kwargs)
        variables = [v for _, v in pairs]
        reduced = self._reducer.reduce_gradients([g for g, _ in pairs], variables)
        return list(zip(reduced, variables, strict=True))

    def apply_gradients(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.apply_gradients(*args, **kwargs)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.variables(*args, **kwargs)


def DistributedOptimizer(
    optimizer: Any,
    name: str | None = None,
    use_locking: bool = False,
    device_dense: str = "",
    device_sparse: str = "",
    compression: Compressor | None = Compression.none,
    sparse_as_dense: bool = False,
    backward_passes_per_step: int = 1,
    op: ReduceOp | None = Average,
    gradient_predivide_factor: float = 1.0,
    average_aggregated_gradients: bool = False,
    num_groups: int = 0,
    groups: Sequence[Sequence[tf.Variable]] | None = None,
    process_set: ProcessSet = global_process_set,
    scale_local_gradients: bool = True,
) -> Any:
    """Horovod's dispatch: a Keras optimizer becomes hora.keras.DistributedOptimizer (every
    option applies); a tf.compat.v1.train.Optimizer is wrapped so that compute_gradients (and
    so minimize) reduces the gradients over the ranks of ``process_set``
    (backward_passes_per_step must be 1 there: UnimplementedError otherwise, use the Keras
    optimizer to accumulate). Anything else is a ValueError. op=Adasum combines the
    gradients with Adasum (as Horovod's Keras optimizer does; Horovod's TF1 graph-mode
    optimizer reduces the delta of a local step instead: hora does that in hora.torch only,
    docs/adasum.md)."""
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        if backward_passes_per_step != 1:
            raise errors.UnimplementedError(
                f"DistributedOptimizer(backward_passes_per_step={backward_passes_per_step}) of "
                "a tf.compat.v1.train.Optimizer: hora accumulates gradients for Keras "
                "optimizers only"
            )
        return _DistributedOptimizerV1(
            optimizer,
            name,
            use_locking,
            compression=compression,
            sparse_as_dense=sparse_as_dense,
            op=op,
            gradient_predivide_factor=gradient_predivide_factor,
            num_groups=num_groups,
            groups=groups,
            process_set=process_set,
            scale_local_gradients=scale_local_gradients,
        )
    if not isinstance(optimizer, _keras_optimizer_types()):
        raise ValueError(
            f"DistributedOptimizer: {optimizer!r} is neither a Keras optimizer nor a "
            "tf.compat.v1.train.Optimizer"
        )
    import hora.keras

    return hora.keras.DistributedOptimizer(
        optimizer,
        compression=compression,
        sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor,
        op=op,
        backward_passes_per_step=backward_passes_per_step,
        average_aggregated_gradients=average_aggregated_gradients,
        num_groups=num_groups,
        groups=groups,
        process_set=process_set,
        scale_local_gradients=scale_local_gradients,
    )


def _keras_optimizer_types() -> tuple[type, ...]:
    """The Keras optimizer base classes of the generation tf.keras resolves to (tf_keras's
    legacy OptimizerV2 is not a subclass of its Optimizer)."""
    from hora._internal.keras import LEGACY, keras

    if LEGACY:
        return (keras.optimizers.Optimizer, keras.optimizers.legacy.Optimizer)
    return (keras.optimizers.Optimizer,)


__all__ = ["DistributedOptimizer"]
