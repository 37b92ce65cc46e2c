"""Horovod's PyTorch API (horovod.torch) on hora: change ``import horovod.torch as hvd`` to
``import hora.torch as hvd`` and the script runs on current PyTorch::

    import hora.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

Supports torch >= 2.1 (it needs Tensor.register_post_accumulate_grad_hook). Where hora
departs from Horovod, the function's docstring says so; in short: Adasum on CUDA tensors is
staged through host memory, built-in compression inside the engine for float32 tensors.
Process sets are Horovod's (``process_set=`` on every collective, the optimizer, the
broadcasts and SyncBatchNorm).
"""

from __future__ import annotations

import torch as _torch

if not hasattr(_torch.Tensor, "register_post_accumulate_grad_hook"):  # pragma: no cover
    raise ImportError(f"hora.torch needs torch >= 2.1, found {_torch.__version__}")

from hora._internal.api import *
from hora.torch import elastic as elastic  # horovod.torch.elastic
from hora.torch.functions import *
from hora.torch.mpi_ops import *
from hora.torch.optimizer import *
from hora.torch.sync_batch_norm import *
