"""Elastic training for hora.tensorflow (horovod.tensorflow.elastic): TensorFlowKerasState (a
Keras model and its optimizer), TensorFlowState (a list of variables) and run, which also
turns a hora error raised inside a tf.function (TensorFlow's OpError naming it) into the
hora.errors class, so a peer failure is caught as HorovodInternalError. Eager TensorFlow 2
only. KerasState and the Keras callbacks are hora.keras.elastic's (importing Keras), also
reachable here by name."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import tensorflow as tf

from hora import runtime
from hora._internal import elastic as _machinery
from hora._internal.elastic import HostsUpdatedInterrupt, State
from hora._internal.tensorflow import call_translating
from hora.errors import HorovodInternalError
from hora.tensorflow.functions import broadcast_object, broadcast_variables

__all__ = [
    "HorovodInternalError",
    "HostsUpdatedInterrupt",
    "ObjectState",
    "State",
    "TensorFlowKerasState",
    "TensorFlowState",
    "run",
]

F = TypeVar("F", bound=Callable[..., Any])

_KERAS_NAMES = (
    "KerasState",
    "CommitStateCallback",
    "UpdateBatchStateCallback",
    "UpdateEpochStateCallback",
)


def _bcast_object(obj: Any) -> Any:
    return broadcast_object(obj, 0, name="hora.elastic.state")


def _variables_of(obj: Any) -> list[Any]:
    """A Keras model's or optimizer's variables (a method on tf_keras's legacy optimizers)."""
    variables = obj.variables
    return list(variables() if callable(variables) else variables)


def _snapshot(variables: Sequence[Any]) -> list[tf.Tensor]:
    return [tf.identity(v) for v in variables]


def _assign(variables: Sequence[Any], values: Sequence[tf.Tensor]) -> None:
    # Only a snapshot of the same variables is assigned (an optimizer built after the commit
    # has more variables than the commit holds; those keep their values).
    if len(variables) != len(values):
        return
    for var, value in zip(variables, values, strict=True):
        var.assign(value)


class ObjectState(_machinery.ObjectState):
    """Plain Python values as a State (pickled by broadcast_object on sync)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(bcast_object=_bcast_object, get_rank=runtime.rank, **kwargs)


class TensorFlowKerasState(ObjectState):
    """A Keras model and its optimizer (``optimizer`` or ``model.optimizer``), plus plain values
    as attributes: commit() snapshots every model and optimizer variable, restore() assigns the
    snapshot back, sync() broadcasts rank 0's variables and commits them. ``backend`` is
    accepted for Horovod's signature (eager TensorFlow needs no session)."""

    def __init__(self, model: Any, optimizer: Any = None, backend: Any = None, **kwargs: Any):
        self.model = model
        self.optimizer = optimizer if optimizer is not None else model.optimizer
        self.backend = backend
        self._save_model()
        super().__init__(**kwargs)

    def save(self) -> None:
        self._save_model()
        super().save()

    def restore(self) -> None:
        _assign(self.model.variables, self._saved_model)
        _assign(_variables_of(self.optimizer), self._saved_optimizer)
        super().restore()

    def sync(self) -> None:
        broadcast_variables(list(self.model.variables) + _variables_of(self.optimizer), 0)
        self._save_model()
        super().sync()

    def _save_model(self) -> None:
        self._saved_model = _snapshot(self.model.variables)
        self._saved_optimizer = _snapshot(_variables_of(self.optimizer))


class TensorFlowState(ObjectState):
    """A list of tf.Variables (``variables``; Horovod's default, tf.global_variables(), is
    TensorFlow 1's and has no eager counterpart, so the list is required) plus plain values."""

    def __init__(self, variables: Sequence[Any], session: Any = None, **kwargs: Any) -> None:
        if variables is None:
            raise ValueError("TensorFlowState: pass the variables to keep (a list of tf.Variable)")
        self.variables = list(variables)
        self.session = session
        self._saved_variables = _snapshot(self.variables)
        super().__init__(**kwargs)

    def save(self) -> None:
        self._saved_variables = _snapshot(self.variables)
        super().save()

    def restore(self) -> None:
        _assign(self.variables, self._saved_variables)
        super().restore()

    def sync(self) -> None:
        if self.variables:
            broadcast_variables(self.variables, 0)
        self._saved_variables = _snapshot(self.variables)
        super().sync()


def _raising_hora_errors(func: F) -> F:
    """``func`` with TensorFlow's OpError that names a hora error raised as that error."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return call_translating(func, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def run(func: F) -> F:
    """Horovod's decorator (hora.elastic.run) for TensorFlow and Keras: a peer failure inside
    the function (eagerly, or inside a tf.function or model.fit) restores the last commit,
    re-initialises the runtime with the survivors, syncs the state and calls it again."""
    return _machinery.run_fn(_raising_hora_errors(func), _machinery.reset_runtime)


def __getattr__(name: str) -> Any:
    """KerasState and the Keras callbacks, imported at first use (they import Keras)."""
    if name in _KERAS_NAMES:
        from hora.keras import elastic as keras_elastic

        return getattr(keras_elastic, name)
    raise AttributeError(f"module 'hora.tensorflow.elastic' has no attribute {name!r}")
