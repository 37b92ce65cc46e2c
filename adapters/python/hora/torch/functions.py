"""Starting every rank from the same state: parameters, optimizer state, any object
(horovod.torch.functions)."""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from hora import runtime
from hora._internal import objects
from hora.process_sets import ProcessSet, global_process_set
from hora.torch import mpi_ops


def _named_tensors(
    params: Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]],
) -> list[tuple[str, torch.Tensor]]:
    if isinstance(params, Mapping):
        items = sorted(params.items())
    else:
        items = list(params)
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError(
                "params: expected a state_dict or a list of (name, tensor) pairs "
                "such as model.named_parameters()"
            )
    return items


def broadcast_parameters(
    params: Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]],
    root_rank: int,
    process_set: ProcessSet = global_process_set,
) -> None:
    """Overwrites every member's parameters with root's (a global rank in the set), in place.
    ``params``: a state_dict (``model.state_dict()``) or ``model.named_parameters()``. Sorted
    by name, so every member broadcasts in the same order."""
    handles = []
    for name, p in _named_tensors(params):
        if p is None:
            continue
        t = p.data if isinstance(p, torch.nn.Parameter) else p
        if not torch.is_tensor(t):
            raise ValueError(f"parameter '{name}': expected a tensor, got {type(t).__name__}")
        handles.append(
            mpi_ops.broadcast_async_(
                t, root_rank, name=f"broadcast.param.{name}", process_set=process_set
            )
        )
    for h in handles:
        mpi_ops.synchronize(h)


def _torch_dumps(obj: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    return buf.getvalue()


def _torch_loads(data: bytes) -> Any:
    return torch.load(io.BytesIO(data), weights_only=False)


# torch.save's format, so that tensors inside an object travel too (to the same device).
_SERIALIZER = objects.Serializer(_torch_dumps, _torch_loads)


def broadcast_object(
    obj: Any,
    root_rank: int = 0,
    name: str | None = None,
    process_set: ProcessSet = global_process_set,
) -> Any:
    """Root's ``obj`` on every member of the set (serialised with torch.save, so tensors
    inside travel too). Every member must call it; only root's ``obj`` matters."""
    return objects.broadcast_object(obj, root_rank, name, _SERIALIZER, process_set)


def allgather_object(
    obj: Any, name: str | None = None, process_set: ProcessSet = global_process_set
) -> list[Any]:
    """The list of every member's ``obj``, in the order of the set's ranks."""
    return objects.allgather_object(obj, name, _SERIALIZER, process_set)


def _zero_grads(optimizer: torch.optim.Optimizer) -> None:
    """What Horovod's state initialisation (a step on zero gradients, for an optimizer with no
    state yet) leaves a script to see: every parameter that requires grad has a zero .grad
    (sparse for SparseAdam). hora needs no such step (root's state travels whole)."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad:
                p.grad = torch.zeros_like(p)
                if isinstance(optimizer, torch.optim.SparseAdam):
                    p.grad = p.grad.to_sparse()


def broadcast_optimizer_state(
    optimizer: torch.optim.Optimizer,
    root_rank: int,
    process_set: ProcessSet = global_process_set,
) -> None:
    """Makes every member's optimizer state root's (root: a global rank in the set): every
    torch.optim optimizer, with state created lazily (none before the first step), scalars,
    step counters and hyperparameters of each param group. Root's state_dict travels as one
    serialised object and is loaded on the other members, which keeps tensors' dtypes (a step
    counter stays a float32 tensor) and handles state that only root has. As after Horovod's,
    when this rank's optimizer had no state yet every parameter that requires grad has a zero
    ``.grad`` afterwards."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("broadcast_optimizer_state does not support LBFGS (nor does Horovod)")
    if not optimizer.state:
        _zero_grads(optimizer)
    state = broadcast_object(
        optimizer.state_dict() if runtime.rank() == root_rank else None,
        root_rank,
        name="broadcast.optimizer_state",
        process_set=process_set,
    )
    if runtime.rank() != root_rank:
        optimizer.load_state_dict(state)
        # load_state_dict casts floating state to its parameter's dtype (NAdam's float32
        # mu_product becomes float64 beside float64 parameters); keep root's tensors as they
        # are, so every rank computes the next steps exactly as root does.
        params = [p for group in optimizer.param_groups for p in group["params"]]
        for index, entries in state["state"].items():
            p = params[index]
            for key, value in entries.items():
                if torch.is_tensor(value):
                    optimizer.state[p][key] = value.to(p.device).clone()


__all__ = [
    "allgather_object",
    "broadcast_object",
    "broadcast_optimizer_state",
    "broadcast_parameters",
]
