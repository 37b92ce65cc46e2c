"""Starting every rank from the same state (horovod.tensorflow.functions): variables, any
picklable object. Each takes ``process_set=`` (the global set by default): only the set's
members call it, and root_rank is a global rank, a member of the set."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from hora._internal import objects
from hora.process_sets import ProcessSet, global_process_set
from hora.tensorflow import mpi_ops


def _variable_name(i: int, var: tf.Variable) -> str:
    path = getattr(var, "path", None) or getattr(var, "name", "") or ""
    return f"broadcast.var.{i}.{path}"


def _assign_from_root(
    variables: Sequence[tf.Variable], root_rank: int, name: str | None, process_set: ProcessSet
) -> list[Any]:
    """Assigns root's value to each variable (collectives named by ``name``.<i>, or by the
    variable); returns the assignments."""
    assigns = []
    for i, var in enumerate(variables):
        member = _variable_name(i, var) if name is None else f"{name}.{i}"
        received = mpi_ops.broadcast(
            tf.convert_to_tensor(var),
            root_rank,
            name=member,
            ignore_name_scope=True,
            process_set=process_set,
        )
        assigns.append(var.assign(received))
    return assigns


def broadcast_variables(
    variables: Sequence[tf.Variable],
    root_rank: int,
    process_set: ProcessSet = global_process_set,
    inplace: bool = False,
) -> tf.Operation | None:
    """Overwrites every set member's ``variables`` (a list of tf.Variable or Keras variables)
    with root's, in the list's order (the same on every member). Eagerly it returns None once
    done; inside a tf.function it returns the op that assigns them. ``inplace`` is accepted
    for Horovod's signature: hora always assigns in place."""
    assigns = _assign_from_root(variables, root_rank, None, process_set)
    if tf.executing_eagerly():
        return None
    return tf.group(*assigns)


def broadcast_(
    variables: Sequence[tf.Variable],
    root_rank: int,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> list[tf.Variable]:
    """Horovod's in-place broadcast: sets every rank's ``variables`` to root_rank's and
    returns them (the same list, in order). ``name`` prefixes the collectives' names."""
    variables = list(variables)
    _assign_from_root(variables, root_rank, name, process_set)
    return variables


def broadcast_global_variables(root_rank: int) -> tf.Operation:
    """Horovod's TensorFlow 1 call: every global variable (``tf.compat.v1.global_variables()``
    of the default graph) set to root_rank's; returns the op that does it, to run in the
    graph's session. As in Horovod it raises RuntimeError eagerly, where TensorFlow 2 keeps no
    global variables: broadcast_variables(model.variables, root_rank) is the call there."""
    if tf.executing_eagerly():
        raise RuntimeError(
            "broadcast_global_variables() does not support eager execution (TensorFlow 2 keeps "
            "no global variables): use broadcast_variables(<model and optimizer variables>, "
            "root_rank) instead"
        )
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


def _session_unused(session: Any) -> None:
    """TensorFlow 1's session argument: hora broadcasts objects over its NumPy API, outside
    any graph, so it needs none."""
    del session


def broadcast_object(
    obj: Any,
    root_rank: int = 0,
    session: Any = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Any:
    """Root's ``obj`` (pickled) on every set member: root gets ``obj`` itself, the others a
    copy. Every member must call it; only root's ``obj`` matters. Runs eagerly, over hora's
    NumPy API (``session``, TensorFlow 1's, is not needed)."""
    _session_unused(session)
    return objects.broadcast_object(obj, root_rank, name, objects.PICKLE, process_set)


def broadcast_object_fn(
    root_rank: int = 0,
    session: Any = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Callable[[Any], Any]:
    """Horovod's: a function of one object that broadcasts it from root_rank (as
    broadcast_object)."""
    _session_unused(session)
    return lambda obj: broadcast_object(obj, root_rank, None, name, process_set)


def allgather_object(
    obj: Any,
    session: Any = None,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> list[Any]:
    """Every set member's ``obj`` (pickled), as a list in the order of the set's ranks."""
    _session_unused(session)
    return objects.allgather_object(obj, name, objects.PICKLE, process_set)


__all__ = [
    "allgather_object",
    "broadcast_",
    "broadcast_global_variables",
    "broadcast_object",
    "broadcast_object_fn",
    "broadcast_variables",
]
