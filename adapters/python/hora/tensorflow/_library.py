"""Loads hora's TensorFlow op library and connects it to this process's engine.

The op library (adapters/tensorflow/, built against the installed TensorFlow's headers and
library) holds asynchronous custom ops. It links no hora code: its kernels call hora._core's
engine through a table of C function pointers (adapters/python/c_api.h) whose address
hora._core hands over here, so a process has one engine whichever API enqueues.
"""

from __future__ import annotations

import ctypes
import os

import tensorflow as tf

from hora import _core

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_hora_tf_ops.so")


def _load():
    if not os.path.exists(_PATH):
        raise ImportError(
            f"hora.tensorflow: its op library {_PATH} is missing. It is built with hora when "
            "the Python hora is built for imports tensorflow (CMake option "
            "HORA_WITH_TENSORFLOW=AUTO/ON): rebuild hora in an environment that has "
            "TensorFlow (scripts/setup_python.sh installs it; with pip: "
            "`pip install --no-build-isolation .`, since pip's isolated build has no TensorFlow)"
        )
    ops = tf.load_op_library(_PATH)
    # The same path gives the same loaded library (dlopen counts references), so this handle
    # reaches the kernels' copy of the table pointer.
    lib = ctypes.CDLL(_PATH)
    lib.hora_tf_connect.argtypes = [ctypes.c_size_t]
    lib.hora_tf_connect.restype = ctypes.c_int
    lib.hora_tf_c_api_version.restype = ctypes.c_int
    if lib.hora_tf_connect(_core.c_api_address()) != 0:
        raise ImportError(
            f"hora.tensorflow: the op library speaks hora C API version "
            f"{lib.hora_tf_c_api_version()} but hora._core offers version "
            f"{_core.c_api_version()}; rebuild hora so both come from one build"
        )
    return ops


ops = _load()
