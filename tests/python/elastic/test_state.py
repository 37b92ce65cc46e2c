"""hora.elastic outside elastic mode (no HORA_ELASTIC): ObjectState's commit, restore and sync
(rank 0's values on every rank), run() syncing then calling the function and letting an error
propagate, and the error classes elastic.run catches."""

import pytest

import hora
import hora.elastic
from hora import errors


@pytest.fixture(scope="module", autouse=True)
def job():
    hora.init()
    yield
    hora.shutdown()


def test_not_elastic():
    from hora import _core

    assert _core.elastic_enabled() is False
    assert _core.elastic_generation() == -1


def test_commit_restore():
    state = hora.elastic.ObjectState(epoch=0, batch=0, history=[])
    state.epoch, state.batch = 3, 7
    state.history.append("a")
    state.commit()
    state.epoch, state.batch, state.history = 9, 9, ["b"]
    state.restore()
    assert (state.epoch, state.batch, state.history) == (3, 7, ["a"])


def test_sync_takes_rank_0s_commit():
    r = hora.rank()
    state = hora.elastic.ObjectState(epoch=10 * r, name=f"rank{r}")
    state.epoch += 1  # not committed: sync broadcasts the committed values
    state.sync()
    assert (state.epoch, state.name) == (0, "rank0")
    state.epoch = 5
    state.commit()
    state.restore()
    assert state.epoch == 5


def test_run_syncs_then_calls():
    r = hora.rank()
    calls = []

    @hora.elastic.run
    def train(state, factor):
        calls.append(state.value)
        return state.value * factor

    assert train(hora.elastic.ObjectState(value=r + 1), 10) == 10
    assert calls == [1]


def test_run_propagates_outside_elastic_mode():
    @hora.elastic.run
    def train(state):
        state.calls += 1
        raise errors.RemoteError("rank 1 failed")

    state = hora.elastic.ObjectState(calls=0)
    with pytest.raises(errors.RemoteError, match="rank 1 failed"):
        train(state)
    assert state.calls == 1  # no retry


def test_check_host_updates_outside_elastic_mode():
    state = hora.elastic.ObjectState(step=0)
    for _ in range(3):
        state.commit()  # no HostsUpdatedInterrupt: no driver adds hosts
        state.check_host_updates()


def test_reset_callbacks_run_in_order():
    seen = []
    state = hora.elastic.ObjectState(step=0)
    state.register_reset_callbacks([lambda: seen.append(1), lambda: seen.append(2)])
    state.register_reset_callbacks([lambda: seen.append(3)])
    state.on_reset()
    assert seen == [1, 2, 3]


def test_peer_failures_are_horovod_internal_errors():
    assert issubclass(errors.RemoteError, errors.HorovodInternalError)
    assert issubclass(errors.HoraTimeoutError, errors.HorovodInternalError)
    assert issubclass(errors.HoraTimeoutError, TimeoutError)
    assert issubclass(errors.HorovodInternalError, errors.HoraError)
    for cls in (errors.MismatchError, errors.InvalidArgumentError, errors.InternalError):
        assert not issubclass(cls, errors.HorovodInternalError), cls
    assert hora.elastic.HorovodInternalError is errors.HorovodInternalError
    interrupt = hora.elastic.HostsUpdatedInterrupt(skip_sync=True)
    assert interrupt.skip_sync and not isinstance(interrupt, errors.HoraError)
