"""SyncBatchNorm: batch normalisation whose batch statistics are taken over every rank's
batch, or every member's of a process set (horovod.torch.SyncBatchNorm).

The statistics come from two differentiable sum-allreduces (the per-channel sum with the
element count, then the sum of squared deviations from the global mean), so autograd derives
the backward pass, including the cross-rank terms, from the allreduce's own gradient. In eval
mode, or on a set of one rank, it is torch's BatchNorm.
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F

import hora
from hora.process_sets import ProcessSet, global_process_set
from hora.torch import mpi_ops

_ids = itertools.count()


class SyncBatchNorm(torch.nn.modules.batchnorm._BatchNorm):
    """Drop-in for BatchNorm1d/2d/3d: the same arguments and state_dict. ``process_set``: the
    ranks whose batches make the statistics (every member calls forward together). A layer's
    tensors are named by the order in which this process made its SyncBatchNorm layers, so
    the members of a set make theirs in the same order."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        process_set: ProcessSet = global_process_set,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self._hora_id = next(_ids)
        self.process_set = process_set

    def _set_size(self) -> int:
        if not hora.is_initialized():
            return 1
        return mpi_ops.set_size_rank(self.process_set)[0]

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(
                f"SyncBatchNorm: expected at least 2D input (N, C, ...), got {input.dim()}D"
            )

    def _average_factor(self) -> float:
        if not (self.training and self.track_running_stats):
            return 0.0
        assert self.num_batches_tracked is not None  # kept with track_running_stats
        self.num_batches_tracked.add_(1)
        if self.momentum is None:
            return 1.0 / float(self.num_batches_tracked)
        return self.momentum

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        self._check_input_dim(input)
        use_batch = self.training or not self.track_running_stats
        if not use_batch or self._set_size() == 1:
            return F.batch_norm(
                input,
                self.running_mean,
                self.running_var,
                self.weight,
                self.bias,
                use_batch,
                self._average_factor() if use_batch else 0.0,
                self.eps,
            )
        factor = self._average_factor()
        channels = input.size(1)
        dims = [0, *list(range(2, input.dim()))]
        shape = [1, channels] + [1] * (input.dim() - 2)
        local_count = input.numel() // channels
        prefix = f"sync_batch_norm.{self._hora_id}"
        head = torch.cat(
            [
                input.sum(dims),
                torch.tensor([float(local_count)], dtype=input.dtype, device=input.device),
            ]
        )
        ps = self.process_set
        head = mpi_ops.allreduce(head, op=hora.Sum, name=f"{prefix}.sum", process_set=ps)
        count = head[channels].detach()
        mean = head[:channels] / count
        centered = input - mean.view(shape)
        sq = mpi_ops.allreduce(
            (centered * centered).sum(dims), op=hora.Sum, name=f"{prefix}.sq", process_set=ps
        )
        var = sq / count
        if factor > 0.0 and self.running_mean is not None and self.running_var is not None:
            with torch.no_grad():
                n = float(count)
                self.running_mean.mul_(1 - factor).add_(factor * mean.detach())
                self.running_var.mul_(1 - factor).add_(
                    factor * var.detach() * (n / max(n - 1.0, 1.0))
                )
        out = centered * torch.rsqrt(var.view(shape) + self.eps)
        if self.affine:
            out = out * self.weight.view(shape) + self.bias.view(shape)
        return out


__all__ = ["SyncBatchNorm"]
