"""hora.torch raises ValueError at the call for a collective whose name is still in flight on
this rank, as Horovod does, for every collective, blocking and async."""

import pytest
import torch

import hora.torch as hvd


@pytest.fixture(scope="module", autouse=True)
def job():
    hvd.init()
    yield
    hvd.shutdown()


def _x():
    return torch.ones(2 * hvd.size(), 3)


CALLS = {
    # kind: (first call, [calls reusing its name, blocking and async])
    "allreduce": (
        lambda n: hvd.allreduce_async(_x(), name=n),
        [
            lambda n: hvd.allreduce(_x(), name=n),
            lambda n: hvd.allreduce_async(_x(), name=n),
            lambda n: hvd.allreduce_(_x(), name=n),
            lambda n: hvd.allreduce_async_(_x(), name=n),
        ],
    ),
    "grouped_allreduce": (
        lambda n: hvd.grouped_allreduce_async([_x()], name=n),
        [
            lambda n: hvd.grouped_allreduce([_x()], name=n),
            lambda n: hvd.grouped_allreduce_async([_x()], name=n),
            lambda n: hvd.grouped_allreduce_([_x()], name=n),
            lambda n: hvd.grouped_allreduce_async_([_x()], name=n),
        ],
    ),
    "allgather": (
        lambda n: hvd.allgather_async(_x(), name=n),
        [lambda n: hvd.allgather(_x(), name=n), lambda n: hvd.allgather_async(_x(), name=n)],
    ),
    "broadcast": (
        lambda n: hvd.broadcast_async(_x(), 0, name=n),
        [
            lambda n: hvd.broadcast(_x(), 0, name=n),
            lambda n: hvd.broadcast_async(_x(), 0, name=n),
            lambda n: hvd.broadcast_(_x(), 0, name=n),
            lambda n: hvd.broadcast_async_(_x(), 0, name=n),
        ],
    ),
    "alltoall": (
        lambda n: hvd.alltoall_async(_x(), name=n),
        [lambda n: hvd.alltoall(_x(), name=n), lambda n: hvd.alltoall_async(_x(), name=n)],
    ),
    "reducescatter": (
        lambda n: hvd.reducescatter_async(_x(), name=n),
        [
            lambda n: hvd.reducescatter(_x(), name=n),
            lambda n: hvd.reducescatter_async(_x(), name=n),
        ],
    ),
}


@pytest.mark.parametrize("kind", sorted(CALLS))
def test_name_in_flight_raises_value_error_at_the_call(kind):
    if hvd.size() == 1:
        pytest.skip("needs a second rank to keep the first call in flight")
    name = f"torch.in_flight.{kind}"
    first, again = CALLS[kind]
    handle = None
    if hvd.rank() == 0:
        handle = first(name)
        for call in again:
            with pytest.raises(ValueError, match=f"tensor '{name}.*still in flight"):
                call(name)
    hvd.barrier()
    if hvd.rank() != 0:
        handle = first(name)
    hvd.synchronize(handle)
