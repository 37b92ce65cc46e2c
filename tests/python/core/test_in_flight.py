"""A collective whose name is still in flight on this rank raises ValueError at the call, as
Horovod's do, for every collective of the framework-neutral API, blocking and async (the
engine refuses it at enqueue; the binding raises from the handle, failed on return)."""

import numpy as np
import pytest

import hora


def _calls(name):
    """(first call, [calls that reuse its name]) per collective; arrays of 2 rows per rank."""
    x = lambda: np.ones((2 * hora.size(), 3), np.float32)  # noqa: E731
    return {
        "allreduce": (
            lambda: hora.allreduce_async(x(), name=name),
            [
                lambda: hora.allreduce(x(), name=name),
                lambda: hora.allreduce_async(x(), name=name),
                lambda: hora.allreduce_async_(x(), name=name),
                lambda: hora.allreduce_(x(), name=name),
            ],
        ),
        "grouped_allreduce": (
            lambda: hora.grouped_allreduce_async([x()], name=name),
            [
                lambda: hora.grouped_allreduce([x()], name=name),
                lambda: hora.grouped_allreduce_async([x()], name=name),
            ],
        ),
        "allgather": (
            lambda: hora.allgather_async(x(), name=name),
            [lambda: hora.allgather(x(), name=name), lambda: hora.allgather_async(x(), name=name)],
        ),
        "broadcast": (
            lambda: hora.broadcast_async(x(), 0, name=name),
            [
                lambda: hora.broadcast(x(), 0, name=name),
                lambda: hora.broadcast_async(x(), 0, name=name),
            ],
        ),
        "alltoall": (
            lambda: hora.alltoall_async(x(), name=name),
            [lambda: hora.alltoall(x(), name=name), lambda: hora.alltoall_async(x(), name=name)],
        ),
        "reducescatter": (
            lambda: hora.reducescatter_async(x(), name=name),
            [
                lambda: hora.reducescatter(x(), name=name),
                lambda: hora.reducescatter_async(x(), name=name),
            ],
        ),
    }


@pytest.mark.parametrize(
    "kind",
    ["allreduce", "grouped_allreduce", "allgather", "broadcast", "alltoall", "reducescatter"],
)
def test_name_in_flight_raises_value_error_at_the_call(hora_job, rank, size, kind):
    if size == 1:
        pytest.skip("needs a second rank to keep the first call in flight")
    name = f"in_flight.{kind}"
    first, again = _calls(name)[kind]
    handle = None
    if rank == 0:
        handle = first()
        for call in again:
            with pytest.raises(ValueError, match=f"tensor '{name}.*still in flight"):
                call()
    hora.barrier()
    if rank != 0:
        handle = first()
    hora.synchronize(handle)
