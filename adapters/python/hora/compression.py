"""Gradient compression with Horovod's interface (``hvd.Compression``, ``hvd.Compressor``).

A compressor is a class with two static methods: ``compress(tensor) -> (tensor, ctx)`` before
the collective and ``decompress(tensor, ctx) -> tensor`` after it. ``Compression.none``,
``Compression.fp16`` and ``Compression.bf16`` are such classes, usable on torch and
TensorFlow tensors and NumPy arrays alike.

hora compresses the built-in ones inside the engine instead of calling their methods: a
float32 tensor is cast to float16 or bfloat16 while it is packed into the fusion buffer and
cast back while unpacked, so the caller's tensors stay float32 and no framework op runs. Each
built-in class names its engine format in ``wire``. A user's own Compressor subclass (``wire``
None) is called around the collective by hora.torch's and hora.tensorflow's allreduce and
DistributedOptimizer, as Horovod does.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from hora import _core


def _dtype_kind(tensor: Any) -> tuple[str, Any]:
    """(framework, dtype) of a torch or TensorFlow tensor or anything NumPy reads."""
    module = type(tensor).__module__
    if module.startswith("torch"):
        return "torch", tensor.dtype
    if module.startswith("tensorflow"):
        return "tensorflow", tensor.dtype
    return "numpy", np.asarray(tensor).dtype


def _is_floating(tensor: Any) -> bool:
    framework, dtype = _dtype_kind(tensor)
    if framework == "torch":
        return bool(dtype.is_floating_point)
    if framework == "tensorflow":
        return bool(dtype.is_floating)
    return dtype.kind == "f" or dtype.name == "bfloat16"


def _cast(tensor: Any, dtype: Any) -> Any:
    """``tensor`` cast to ``dtype`` (a framework dtype, or a name: "float16", "bfloat16")."""
    framework, _ = _dtype_kind(tensor)
    if framework == "torch":
        import torch

        return tensor.to(getattr(torch, dtype) if isinstance(dtype, str) else dtype)
    if framework == "tensorflow":
        import tensorflow as tf

        return tf.cast(tensor, dtype)
    if dtype == "bfloat16":
        import ml_dtypes

        dtype = ml_dtypes.bfloat16
    return np.asarray(tensor).astype(dtype)


class Compressor:
    """Horovod's compressor interface. Subclass it with static ``compress`` and
    ``decompress`` and pass the class (``compression=MyCompressor``) to allreduce or
    DistributedOptimizer; every rank must use the same one."""

    # The engine's format of a built-in compressor; None for a user's own, which hora calls.
    wire: ClassVar[_core.Compression | None] = None

    @staticmethod
    def compress(tensor: Any) -> tuple[Any, Any]:
        """Returns the tensor to send and the context decompress needs."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        """Returns the tensor the caller gets from the received one and compress's context."""
        raise NotImplementedError


class NoneCompressor(Compressor):
    """No compression."""

    wire = _core.Compression.none

    @staticmethod
    def compress(tensor: Any) -> tuple[Any, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        return tensor


class _CastCompressor(Compressor):
    """Floating tensors travel as ``half`` (a dtype name); others as they are."""

    half: ClassVar[str] = "float16"

    @classmethod
    def compress(cls, tensor: Any) -> tuple[Any, Any]:  # type: ignore[override]
        if not _is_floating(tensor):
            return tensor, None
        return _cast(tensor, cls.half), _dtype_kind(tensor)[1]

    @staticmethod
    def decompress(tensor: Any, ctx: Any) -> Any:
        return tensor if ctx is None else _cast(tensor, ctx)


class FP16Compressor(_CastCompressor):
    """Floating tensors travel as float16 (in hora's engine: float32 ones)."""

    wire = _core.Compression.fp16
    half = "float16"


class BF16Compressor(_CastCompressor):
    """Floating tensors travel as bfloat16 (in hora's engine: float32 ones)."""

    wire = _core.Compression.bf16
    half = "bfloat16"


class Compression:
    """``none``: as it is on the wire; ``fp16``: float16; ``bf16``: bfloat16."""

    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor


def user_compressor(compression: object) -> Any:
    """``compression`` when it is a user's own Compressor (a subclass or an instance without
    an engine format), which the caller runs around the collective; None otherwise."""
    is_compressor = isinstance(compression, Compressor) or (
        isinstance(compression, type) and issubclass(compression, Compressor)
    )
    if is_compressor and getattr(compression, "wire", None) is None:
        return compression
    return None
