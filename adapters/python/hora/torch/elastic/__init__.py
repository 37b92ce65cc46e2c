"""Elastic training for hora.torch (horovod.torch.elastic)::

    import hora.torch as hvd
    hvd.init()
    sampler = hvd.elastic.ElasticSampler(dataset)
    loader = torch.utils.data.DataLoader(dataset, batch_size=32, sampler=sampler)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, batch=0)

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            for state.batch, (x, y) in enumerate(loader, start=state.batch): ...
            ...

    train(state)

docs/elastic.md has the whole example and what happens on a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hora._internal import elastic as _machinery
from hora._internal.elastic import HostsUpdatedInterrupt, State
from hora.elastic import ObjectState
from hora.errors import HorovodInternalError
from hora.torch.elastic.sampler import ElasticSampler
from hora.torch.elastic.state import TorchState

__all__ = [
    "ElasticSampler",
    "HorovodInternalError",
    "HostsUpdatedInterrupt",
    "ObjectState",
    "State",
    "TorchState",
    "run",
]

F = TypeVar("F", bound=Callable[..., Any])


def run(func: F) -> F:
    """Horovod's decorator (hora.elastic.run): ``func(state, ...)`` after state.sync(); in
    elastic mode a peer failure restores the last commit, the runtime re-initialises in this
    process with the survivors (and any new workers), the state is synced from the new rank 0
    and func runs again."""
    return _machinery.run_fn(func, _machinery.reset_runtime)
