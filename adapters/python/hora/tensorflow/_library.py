"""Loads hora's TensorFlow op library and connects it to this process's engine.

The op library (adapters/tensorflow/, built against the installed TensorFlow's headers and
library) holds asynchronous custom ops. It links no hora code: its kernels call hora._core's
engine through a table of C function pointers (adapters/python/c_api.h) whose address
hora._core hands over here, so a process has one engine whichever API enqueues.

Which library: the one a build with TensorFlow present put beside this file
(_hora_tf_ops.so, with _hora_tf_ops.json saying which TensorFlow it was built for) when it
matches the TensorFlow imported here; otherwise, as after pip's isolated build (which has no
TensorFlow), hora builds it from the sources the package ships, once per TensorFlow version
and ABI, into a cache (hora/_extension.py).
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import sys

import tensorflow as tf

import hora
from hora import _core, _extension

_NAME = "_hora_tf_ops"


def _abi():
    """What a library must have been built for to load here: TensorFlow's version and its
    compile and link flags (among them _GLIBCXX_USE_CXX11_ABI), less the paths."""
    return {
        "tensorflow": tf.__version__,
        "compile_flags": [f for f in tf.sysconfig.get_compile_flags() if not f.startswith("-I")],
        "link_flags": [f for f in tf.sysconfig.get_link_flags() if not f.startswith("-L")],
    }


def _prebuilt(abi):
    """The prebuilt library beside this package's files if it was built for `abi`, else None."""
    for folder in sys.modules[__package__].__path__:
        path = os.path.join(folder, _NAME + ".so")
        try:
            with open(os.path.join(folder, _NAME + ".json")) as f:
                built_for = json.load(f)
        except (OSError, ValueError):
            continue
        if os.path.isfile(path) and built_for == abi:
            return path
    return None


def _built_here(abi):
    """The library built from the shipped sources (or found in the cache)."""
    root = _extension.shipped_root(hora.__path__, "adapters/tensorflow/ops.cc")
    if root is None:
        raise ImportError(
            f"hora.tensorflow: found neither a prebuilt op library ({_NAME}.so) for tensorflow "
            f"{abi['tensorflow']} nor the sources to build one (hora/_ext_src/adapters/"
            f"tensorflow under {list(hora.__path__)}); reinstall hora"
        )
    src = os.path.join(root, "adapters", "tensorflow")
    return _extension.build(
        _extension.Extension(
            name="hora_tf_ops",
            what=f"the TensorFlow op library for tensorflow {abi['tensorflow']}",
            sources=sorted(glob.glob(os.path.join(src, "*.cc"))),
            depends=[
                *sorted(glob.glob(os.path.join(src, "*.h"))),
                os.path.join(root, "adapters", "python", "c_api.h"),
            ],
            include_dirs=[root],
            # TensorFlow's headers as system headers (as the CMake build has them), so that
            # their deprecation warnings do not bury a real error in the compiler's output.
            cflags=[
                f"-isystem{f[2:]}" if f.startswith("-I") else f
                for f in tf.sysconfig.get_compile_flags()
            ],
            ldflags=tf.sysconfig.get_link_flags(),
            key_parts=["tensorflow", abi["tensorflow"]],
        )
    )


def _load(path):
    ops = tf.load_op_library(path)
    # The same path gives the same loaded library (dlopen counts references), so this handle
    # reaches the kernels' copy of the table pointer.
    lib = ctypes.CDLL(path)
    lib.hora_tf_connect.argtypes = [ctypes.c_size_t]
    lib.hora_tf_connect.restype = ctypes.c_int
    lib.hora_tf_c_api_version.restype = ctypes.c_int
    if lib.hora_tf_connect(_core.c_api_address()) != 0:
        raise ImportError(
            f"hora.tensorflow: the op library {path} speaks hora C API version "
            f"{lib.hora_tf_c_api_version()} but hora._core offers version "
            f"{_core.c_api_version()}; rebuild hora so both come from one build"
        )
    return ops


_abi_here = _abi()
# The library loaded: prebuilt, or in the extension cache.
PATH = _prebuilt(_abi_here) or _built_here(_abi_here)
ops = _load(PATH)
