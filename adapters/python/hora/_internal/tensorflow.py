"""Running hora's TensorFlow ops (for hora.tensorflow and hora.keras, the only importers: this
module imports TensorFlow). Eagerly, an op that fails raises the hora.errors class its message
names (MismatchError, RemoteError, ...); inside a tf.function TensorFlow raises its own
tf.errors.OpError, whose message starts with that class name."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from hora import errors

_HORA_ERROR = re.compile(r"hora\.(\w+Error): ")
_TF_SUFFIX = re.compile(r"\s*\[Op:\w+\]( name: .*)?$", re.S)


def translated(error: tf.errors.OpError) -> errors.HoraError | None:
    """The hora.errors exception an op's error message names, or None."""
    match = _HORA_ERROR.search(error.message)
    if match is None:
        return None
    cls = getattr(errors, match.group(1), None)
    if not isinstance(cls, type) or not issubclass(cls, errors.HoraError):
        return None
    return cls(_TF_SUFFIX.sub("", error.message[match.end() :]))


def call_translating(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; TensorFlow's OpError that names a hora error is raised as that
    hora.errors class (from TensorFlow's error)."""
    try:
        return fn(*args, **kwargs)
    except tf.errors.OpError as e:
        hora_error = translated(e)
        if hora_error is None:
            raise
        raise hora_error from e


def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, an op wrapper; eagerly, a hora error becomes its hora.errors
    class (raised from TensorFlow's error)."""
    if not tf.executing_eagerly():
        return fn(*args, **kwargs)
    return call_translating(fn, *args, **kwargs)
