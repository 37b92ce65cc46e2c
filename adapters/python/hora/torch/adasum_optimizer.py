"""DistributedOptimizer(op=hora.Adasum) for torch: Horovod's Adasum optimizer
(horovod/torch/optimizer.py, _DistributedAdasumOptimizer) on hora.

Adasum (Maleki et al., MLSys 2021) combines the ranks' *updates*, not their gradients: when a
parameter's gradient is ready (the k-th backward pass, k = backward_passes_per_step), the hook
runs the wrapped optimizer's step for that parameter alone, takes the delta it made
(new - start), restores nothing but starts an Adasum allreduce of the delta in place; step()
waits for each delta and sets the parameter to start + adasum(deltas). So the optimizer's
state (momentum, Adam's moments) stays local to each rank, as in Horovod, and communication
overlaps the rest of backward.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

import hora
from hora.errors import FailedPreconditionError
from hora.ops import Handle
from hora.process_sets import ProcessSet
from hora.torch import mpi_ops


class _DistributedAdasumOptimizer(torch.optim.Optimizer):
    """Mixed into the wrapped optimizer's class, as _DistributedOptimizer is."""

    def __init__(
        self,
        param_groups: list[dict[str, Any]],
        names_of: Callable[[Any, list[torch.nn.Parameter]], list[str]],
        backward_passes_per_step: int,
        process_set: ProcessSet,
    ) -> None:
        super(self.__class__, self).__init__(param_groups)  # type: ignore[call-arg]
        if backward_passes_per_step < 1:
            raise ValueError(
                f"DistributedOptimizer: backward_passes_per_step is {backward_passes_per_step}"
                ", expected >= 1"
            )
        params = [p for g in self.param_groups for p in g["params"] if p.requires_grad]
        self._parameter_names = dict(zip(params, names_of(self, params), strict=True))
        self._hora_passes = int(backward_passes_per_step)
        self._hora_process_set = process_set
        self._hora_starts = {p: torch.zeros_like(p, requires_grad=False) for p in params}
        self._hora_delays = dict.fromkeys(params, self._hora_passes)
        self._hora_handles: dict[torch.nn.Parameter, Handle] = {}
        self._hora_hooks = [p.register_post_accumulate_grad_hook(self._hora_hook) for p in params]

    def _hora_hook(self, p: torch.nn.Parameter) -> None:
        if p in self._hora_handles:
            raise FailedPreconditionError(
                f"DistributedOptimizer: the gradient of '{self._parameter_names[p]}' was "
                f"accumulated more than backward_passes_per_step={self._hora_passes} times "
                "before step(); call step() after each k-th backward pass"
            )
        self._hora_delays[p] -= 1
        if self._hora_delays[p] == 0:
            self._hora_handles[p] = self._hora_local_step(p)

    @torch.no_grad()
    def _hora_local_step(self, p: torch.nn.Parameter) -> Handle:
        """Steps the wrapped optimizer on p alone, leaves the delta in p and starts its
        Adasum allreduce in place."""
        start = self._hora_starts[p]
        stashed = [g["params"] for g in self.param_groups]
        for g in self.param_groups:
            g["params"] = [p] if any(p is v for v in g["params"]) else []
        try:
            start.copy_(p)
            super(self.__class__, self).step()
            p.sub_(start)
        finally:
            for g, params in zip(self.param_groups, stashed, strict=True):
                g["params"] = params
        return mpi_ops.allreduce_async_(
            p.data,
            name="delta/" + self._parameter_names[p],
            op=hora.Adasum,
            process_set=self._hora_process_set,
        )

    def synchronize(self) -> None:
        """Starts the parameters whose hooks have not fired (no gradient this step: their
        delta is the wrapped optimizer's, often zero), waits for every delta and applies
        start + adasum(deltas)."""
        for p in self._hora_starts:
            if p not in self._hora_handles:
                self._hora_handles[p] = self._hora_local_step(p)
        with torch.no_grad():
            for p, handle in self._hora_handles.items():
                delta = mpi_ops.synchronize(handle)
                start = self._hora_starts[p]
                start.add_(delta)
                p.copy_(start)
        self._hora_handles.clear()
        self._hora_delays = dict.fromkeys(self._hora_starts, self._hora_passes)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = closure() if closure is not None else None
        self.synchronize()
        return loss


def adasum_optimizer(
    optimizer: torch.optim.Optimizer,
    names_of: Callable[[Any, list[torch.nn.Parameter]], list[str]],
    backward_passes_per_step: int,
    process_set: ProcessSet,
) -> torch.optim.Optimizer:
    """``optimizer`` wrapped as _DistributedAdasumOptimizer (its state carried over)."""
    cls = type(
        optimizer.__class__.__name__,
        (optimizer.__class__,),
        dict(_DistributedAdasumOptimizer.__dict__),
    )
    wrapped = cls(optimizer.param_groups, names_of, backward_passes_per_step, process_set)
    if optimizer.state:
        wrapped.load_state_dict(optimizer.state_dict())
    return wrapped


__all__: Iterable[str] = []
