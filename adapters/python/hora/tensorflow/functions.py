"""Starting every rank from the same state (horovod.tensorflow.functions): variables, any
picklable object."""

from __future__ import annotations

import pickle

import numpy as np
import tensorflow as tf

import hora
from hora.tensorflow import mpi_ops


def _variable_name(i, var):
    path = getattr(var, "path", None) or getattr(var, "name", "") or ""
    return f"broadcast.var.{i}.{path}"


def broadcast_variables(variables, root_rank):
    """Overwrites every rank's ``variables`` (a list of tf.Variable or Keras variables) with
    root's, in the list's order (the same on every rank). Eagerly it returns None once done;
    inside a tf.function it returns the op that assigns them."""
    assigns = []
    for i, var in enumerate(variables):
        value = tf.convert_to_tensor(var)
        received = mpi_ops.broadcast(
            value, root_rank, name=_variable_name(i, var), ignore_name_scope=True
        )
        assigns.append(var.assign(received))
    if tf.executing_eagerly():
        return None
    return tf.group(*assigns)


def broadcast_object(obj, root_rank=0, name=None):
    """Root's ``obj`` (pickled) on every rank. Every rank must call it; only root's ``obj``
    matters. Runs eagerly, over hora's NumPy API."""
    name = name or "broadcast_object"
    payload = (
        np.frombuffer(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL), np.uint8).copy()
        if hora.rank() == root_rank
        else np.zeros(0, np.uint8)
    )
    length = np.array([payload.size], np.int64)
    hora.broadcast_(length, root_rank, name=f"{name}.length")
    if hora.rank() != root_rank:
        payload = np.zeros(int(length[0]), np.uint8)
    hora.broadcast_(payload, root_rank, name=f"{name}.data")
    return pickle.loads(payload.tobytes())


def allgather_object(obj, name=None):
    """Every rank's ``obj`` (pickled), as a list in rank order."""
    name = name or "allgather_object"
    payload = np.frombuffer(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL), np.uint8).copy()
    lengths = hora.allgather(np.array([payload.size], np.int64), name=f"{name}.lengths")
    data = hora.allgather(payload, name=f"{name}.data")
    out, offset = [], 0
    for n in lengths.tolist():
        out.append(pickle.loads(data[offset : offset + n].tobytes()))
        offset += n
    return out
