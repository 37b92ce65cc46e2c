"""Elastic training with Horovod's API (horovod.common.elastic), framework-neutral: the state
is plain Python values (ObjectState) synced with pickle, and NumPy collectives inside the
function raise HorovodInternalError when a peer fails::

    import hora, hora.elastic
    hora.init()
    state = hora.elastic.ObjectState(epoch=0, weights=w)

    @hora.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...  # hora.allreduce(...) each step
            state.commit()

    train(state)

Under ``horarun --min-np/--max-np/--host-discovery-script`` a failed peer rolls every survivor
back to the last commit, re-rendezvouses them in the same processes and goes on; new workers
join at a commit. hora.torch.elastic and hora.tensorflow.elastic / hora.keras.elastic add the
frameworks' states (docs/elastic.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hora import runtime
from hora._internal import elastic as _machinery
from hora._internal.elastic import HostsUpdatedInterrupt, State
from hora._internal.objects import PICKLE
from hora._internal.objects import broadcast_object as _broadcast_object
from hora.errors import HorovodInternalError

__all__ = ["HorovodInternalError", "HostsUpdatedInterrupt", "ObjectState", "State", "run"]

F = TypeVar("F", bound=Callable[..., Any])


def _bcast_object(obj: Any) -> Any:
    return _broadcast_object(obj, 0, "hora.elastic.state", PICKLE)


class ObjectState(_machinery.ObjectState):
    """Plain Python values (picklable) as a State: ``ObjectState(epoch=0, batch=0)``; sync()
    broadcasts rank 0's committed values with pickle."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(bcast_object=_bcast_object, get_rank=runtime.rank, **kwargs)


def run(func: F) -> F:
    """Horovod's decorator: ``func(state, ...)`` runs after state.sync(); in elastic mode a
    peer failure (HorovodInternalError) restores the last commit and an added host
    (HostsUpdatedInterrupt) keeps the state, then the runtime re-initialises with the new
    membership, the reset callbacks run, the state is synced from the new rank 0 and func is
    called again. Outside elastic mode an error propagates."""
    return _machinery.run_fn(func, _machinery.reset_runtime)
