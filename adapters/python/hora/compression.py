"""Gradient compression on the wire (Horovod's ``hvd.Compression``).

hora compresses inside the engine: a float32 tensor is cast to float16 or bfloat16 while it
is packed into the fusion buffer and cast back while unpacked, so the caller's tensors stay
float32 and no extra framework ops run (Horovod's compressors cast in the framework instead).
"""

from __future__ import annotations

from typing import ClassVar

from hora import _core


class Compressor:
    """One of hora.Compression's values: the wire format the engine casts float32 tensors
    to (``wire``, the binding's Compression)."""

    def __init__(self, wire: _core.Compression, name: str) -> None:
        self.wire = wire
        self._name = name

    def __repr__(self) -> str:
        return f"hora.Compression.{self._name}"


class Compression:
    """``none``: float32 on the wire; ``fp16``: float16; ``bf16``: bfloat16."""

    none: ClassVar[Compressor] = Compressor(_core.Compression.none, "none")
    fp16: ClassVar[Compressor] = Compressor(_core.Compression.fp16, "fp16")
    bf16: ClassVar[Compressor] = Compressor(_core.Compression.bf16, "bf16")
