"""Elastic training's framework-neutral machinery (Horovod's horovod/common/elastic.py): the
State and ObjectState classes, HostsUpdatedInterrupt and the retry loop behind every API's
``elastic.run``. hora.elastic, hora.torch.elastic and hora.tensorflow.elastic build on it.

A job started by ``horarun --min-np/--max-np/--host-discovery-script`` runs in elastic mode
(HORA_ELASTIC=1): a peer's failure raises HorovodInternalError (RemoteError, or
HoraTimeoutError for a peer that stopped answering) on the survivors' collectives instead of
ending the job, and ``hora._core.elastic_reset`` re-initialises the runtime in place with the
next membership that horarun publishes. Outside elastic mode nothing here resets: run() syncs
the state and calls the function, and a failure propagates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from hora import _core
from hora.errors import HorovodInternalError

__all__ = ["HostsUpdatedInterrupt", "ObjectState", "State", "enabled", "reset_runtime", "run_fn"]

F = TypeVar("F", bound=Callable[..., Any])


class HostsUpdatedInterrupt(RuntimeError):
    """Raised on every rank at the same commit() or check_host_updates() when horarun found new
    slots: elastic.run then re-initialises with the grown membership. ``skip_sync``: the state
    is already consistent on every rank (Horovod sets it when hosts were only removed; hora
    adds workers, who need the state, so it is False)."""

    def __init__(self, skip_sync: bool = False) -> None:
        super().__init__("the job's hosts were updated: the workers re-rendezvous")
        self.skip_sync = skip_sync


def enabled() -> bool:
    """True in a worker started by horarun in elastic mode (HORA_ELASTIC=1)."""
    return bool(_core.elastic_enabled())


class State:
    """What a training loop must keep across a membership change: subclasses say how to
    save() (commit a copy), restore() (go back to the copy), sync() (take rank 0's) and
    reset() (adapt to the new membership)."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int]) -> None:
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks: list[Callable[[], None]] = []

    def register_reset_callbacks(self, callbacks: Iterable[Callable[[], None]]) -> None:
        """Functions called (in order, no arguments) after each re-initialisation, before the
        state is synced: e.g. to scale the learning rate to the new size."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self) -> None:
        """Called by elastic.run after the runtime was re-initialised."""
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def commit(self) -> None:
        """Saves the state (the point a failure rolls back to), then checks for added hosts:
        raises HostsUpdatedInterrupt on every rank together when horarun has added some."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self) -> None:
        """Raises HostsUpdatedInterrupt on every rank at this same call when horarun has new
        workers waiting: one collective decision (rank 0 asks horarun's store and broadcasts
        the answer), so every rank must call it at the same step. Outside elastic mode it does
        nothing."""
        if enabled() and _core.elastic_hosts_updated():
            raise HostsUpdatedInterrupt(skip_sync=False)

    def save(self) -> None:
        raise NotImplementedError(f"{type(self).__name__}.save")

    def restore(self) -> None:
        raise NotImplementedError(f"{type(self).__name__}.restore")

    def sync(self) -> None:
        raise NotImplementedError(f"{type(self).__name__}.sync")

    def reset(self) -> None:
        """Adapts to a new membership (nothing by default)."""


class ObjectState(State):
    """A State of plain Python values given as keyword arguments, readable and assignable as
    attributes (``state.epoch += 1``); save() copies the attributes' current values, sync()
    broadcasts the saved values from rank 0 with ``bcast_object``."""

    def __init__(
        self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int], **kwargs: Any
    ) -> None:
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self) -> None:
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self) -> None:
        self._set_attrs()

    def sync(self) -> None:
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self) -> None:
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


def run_fn(func: F, reset: Callable[[bool, str], None]) -> F:
    """Horovod's elastic.run loop around ``func(state, ...)``: sync the state, call func; on
    HorovodInternalError (elastic mode only) restore the last commit, on HostsUpdatedInterrupt
    keep the state; then ``reset(hosts_updated, reason)`` (re-initialise with the next
    membership), state.on_reset() and go round again. Outside elastic mode the first error
    propagates."""

    @functools.wraps(func)
    def wrapper(state: State, *args: Any, **kwargs: Any) -> Any:
        skip_sync = False
        while True:
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except HorovodInternalError as e:
                if not enabled():
                    raise
                state.restore()
                skip_sync = False
                hosts_updated, reason = False, f"{type(e).__name__}: {e}"
            except HostsUpdatedInterrupt as e:
                skip_sync = e.skip_sync
                hosts_updated, reason = True, "hosts updated"
            reset(hosts_updated, reason.splitlines()[0] if reason else reason)
            state.on_reset()

    return wrapper  # type: ignore[return-value]


def reset_runtime(hosts_updated: bool, reason: str) -> None:
    """Leaves the current generation and re-initialises in this process with the next one
    (hora._core.elastic_reset; raises when this worker was removed, horarun aborted the job or
    no membership came within HORA_ELASTIC_TIMEOUT_S)."""
    _core.elastic_reset(hosts_updated, reason)
