"""torch tensors as hora sees them: dtypes, allocators, and the detach that DLPack needs."""

from __future__ import annotations

from collections.abc import Callable

import torch

from hora import _core
from hora.errors import InvalidArgumentError

DTYPES = {
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "uint16": torch.uint16,
    "int32": torch.int32,
    "int64": torch.int64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "bool": torch.bool,
}

# torch's DLPack exporter without Tensor.__dlpack__'s Python-level checks (microseconds per
# call): the versioned capsule where this torch has it. For the gradient hook's fast path
# (GradientReducer.ready_param), which takes only dense, contiguous gradients from it.
DLPACK_EXPORTER = getattr(torch._C, "_to_dlpack_versioned", None) or torch._C._to_dlpack
# Every collective's tensors too (hora.torch hands them over detached, so __dlpack__'s
# requires_grad check has nothing to refuse; a subclass still goes through its __dlpack__).
_core.register_exporter(torch.Tensor, DLPACK_EXPORTER)


def allocator_like(tensor: torch.Tensor) -> Callable[[str, tuple[int, ...]], torch.Tensor]:
    """An OutputAllocator making torch tensors on ``tensor``'s device."""
    device = tensor.device

    def allocate(dtype_name: str, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.empty(shape, dtype=DTYPES[dtype_name], device=device)

    return allocate


def stream_of(tensor: torch.Tensor) -> int:
    """The integer hora's binding takes as a CUDA tensor's stream: the current stream of its
    device, whose work produced it (the engine waits for that work on the GPU before reading
    the tensor; synchronize makes the current stream wait for the result on the GPU, and a
    completed handle's outputs are ready for any stream). 0 for CPU tensors."""
    if not tensor.is_cuda:  # (tensor.device builds a device object: microseconds)
        return 0
    return torch.cuda.current_stream(tensor.device).cuda_stream


def plain(tensor: object, what: str = "tensor") -> torch.Tensor:
    """``tensor`` detached from autograd (same memory), for DLPack; refuses non-tensors."""
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgumentError(f"{what}: expected a torch.Tensor, got {type(tensor).__name__}")
    return tensor.detach()


def contiguous(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous, detached tensor: ``tensor`` itself when it already is one (out-of-place
    collectives may copy; in-place ones must not, see in_place)."""
    t = tensor.detach()
    return t if t.is_contiguous() else t.contiguous()


def in_place(tensor: torch.Tensor, name: str | None) -> torch.Tensor:
    """The tensor an in-place collective writes: it must be contiguous (a copy would take the
    result away from the caller's tensor)."""
    t = plain(tensor)
    if not t.is_contiguous():
        raise InvalidArgumentError(
            f"tensor '{name or '<unnamed>'}': an in-place collective needs a contiguous tensor "
            f"(strides {tuple(t.stride())}); call .contiguous() or use the out-of-place form"
        )
    return t
