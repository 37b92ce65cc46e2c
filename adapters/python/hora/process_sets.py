"""Process sets: groups of the job's ranks that run collectives among themselves, with
Horovod's API (``hvd.ProcessSet``, ``global_process_set``, ``add_process_set``,
``remove_process_set``), shared by hora, hora.torch, hora.tensorflow and hora.keras.

Sets are given to ``init(process_sets=[...])`` (the same list on every rank), or added and
removed after init in a job started with ``init(process_sets="dynamic")`` (or
HORA_DYNAMIC_PROCESS_SETS=1), collectively: every rank makes the same calls in the same order.
Every collective takes ``process_set=``; only the set's members may call it, root ranks are
global ranks, and results are the set's (allgather's blocks in the order of ``ranks``).
Each set negotiates and runs on its own (docs/architecture.md, "Process sets").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hora import _core


class ProcessSet:
    """The set of ``ranks`` (any order; kept sorted). Register it by passing it to
    ``init(process_sets=[...])`` or ``add_process_set``; ``process_set_id`` is then its id."""

    process_set_id: int | None = None
    ranks: list[int] | None = None
    mpi_comm: Any = None

    def __init__(self, ranks_or_comm: Sequence[int]) -> None:
        try:
            ranks = list(ranks_or_comm)
        except TypeError:
            raise ValueError(
                "hora.ProcessSet takes a list of ranks; an MPI communicator cannot define one "
                "(hora's MPI backend makes each set's communicator itself), got "
                f"{type(ranks_or_comm).__name__}"
            ) from None
        if any(isinstance(r, bool) or not isinstance(r, int) for r in ranks):
            raise ValueError(f"hora.ProcessSet takes a list of integer ranks, got {ranks}")
        self.ranks = sorted(ranks)

    def invalidate(self) -> None:
        """Forgets the registration (what remove_process_set does to every object of the set)."""
        self.process_set_id = None

    _invalidate = invalidate

    def size(self) -> int | None:
        """The number of ranks in the set, or None while it is not registered."""
        if self.process_set_id is None or self.ranks is None:
            return None
        return len(self.ranks)

    def rank(self) -> int | None:
        """This process's index in the set (-1 when it is not a member), or None while the set
        is not registered. Collectives still take global ranks as roots."""
        if self.process_set_id is None or self.ranks is None:
            return None
        me = _core.rank()
        return self.ranks.index(me) if me in self.ranks else -1

    def included(self) -> bool | None:
        """Whether this process is a member, or None while the set has no ranks."""
        if self.ranks is None or not _core.is_initialized():
            return None
        return _core.rank() in self.ranks

    def __str__(self) -> str:
        return (
            f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, "
            f"mpi_comm={self.mpi_comm})"
        )

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0

# Every ProcessSet object registered under each id (so removal invalidates them all).
_registry: dict[int, list[ProcessSet]] = {0: [global_process_set]}


def init_arguments(process_sets: Any) -> tuple[list[list[int]], bool]:
    """init's ``process_sets`` as the binding takes it: (the static sets' ranks, dynamic)."""
    if process_sets is None:
        return [], False
    if isinstance(process_sets, str):
        if process_sets != "dynamic":
            raise ValueError(
                "init(process_sets=...) takes a list of ProcessSet or 'dynamic', got "
                f"{process_sets!r}"
            )
        return [], True
    sets = [ps if isinstance(ps, ProcessSet) else ProcessSet(ps) for ps in process_sets]
    seen: list[list[int]] = []
    for ps in sets:
        assert ps.ranks is not None
        if ps.ranks in seen:
            raise ValueError(f"init(process_sets=...): the set of ranks {ps.ranks} is given twice")
        seen.append(ps.ranks)
    return [ps.ranks for ps in sets if ps.ranks is not None], False


def after_init(process_sets: Any) -> None:
    """Gives the sets passed to init their ids and refreshes the registry (hora's init)."""
    _registry.clear()
    _registry[0] = [global_process_set]
    global_process_set.ranks = list(range(_core.size()))
    by_ranks = {tuple(ranks): set_id for set_id, ranks in _core.process_sets()}
    if process_sets is not None and not isinstance(process_sets, str):
        for ps in process_sets:
            if isinstance(ps, ProcessSet) and ps.ranks is not None:
                ps.process_set_id = by_ranks[tuple(ps.ranks)]
                _registry.setdefault(ps.process_set_id, []).append(ps)
    for ranks, set_id in by_ranks.items():
        if set_id not in _registry:
            ps = ProcessSet(list(ranks))
            ps.process_set_id = set_id
            _registry[set_id] = [ps]


def add_process_set(process_set: ProcessSet | Sequence[int]) -> ProcessSet:
    """Registers ``process_set`` (or a list of ranks) collectively: every rank calls it with the
    same ranks, in the same order as its other add/remove calls. Needs a job with dynamic
    process sets. Returns the registered ProcessSet."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError(f"{process_set} is registered already")
    assert process_set.ranks is not None
    set_id, ranks = _core.add_process_set(process_set.ranks)
    process_set.process_set_id = set_id
    process_set.ranks = list(ranks)
    _registry.setdefault(set_id, []).append(process_set)
    return process_set


def remove_process_set(process_set: ProcessSet) -> bool:
    """Unregisters ``process_set`` collectively (its pending collectives fail) and invalidates
    every ProcessSet object of it. False for the global set, which stays."""
    set_id = process_set.process_set_id
    if set_id is None:
        raise ValueError(f"{process_set} is not registered")
    if set_id == 0:
        return False
    _core.remove_process_set(set_id)
    for ps in _registry.pop(set_id, [process_set]):
        ps.invalidate()
    return True


def process_set_by_id(process_set_id: int) -> ProcessSet:
    """The registered ProcessSet of that id."""
    if process_set_id not in _registry:
        raise ValueError(f"no process set with id {process_set_id} is registered")
    return _registry[process_set_id][0]


def process_sets() -> list[ProcessSet]:
    """Every registered set, by id (the global set first)."""
    return [_registry[i][0] for i in sorted(_registry)]


def set_id(process_set: ProcessSet | None) -> int:
    """The id a collective's ``process_set=`` argument names (None: the global set)."""
    if process_set is None:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise TypeError(f"process_set must be a hora.ProcessSet, got {type(process_set).__name__}")
    if process_set.process_set_id is None:
        raise ValueError(
            f"{process_set} is not registered: pass it to init(process_sets=[...]) or "
            "add_process_set() first (a removed set stays unregistered)"
        )
    return process_set.process_set_id
