"""Process sets in the framework-neutral API (NumPy): static sets given to init, dynamic sets
added and removed, every collective on every set shape checked against NumPy, and the errors
of bad input. Each test owns init and shutdown (the sets are part of init)."""

import numpy as np
import pytest
from helpers import shapes

import hora
from hora import ProcessSet

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.float16]


def check_set(ps: ProcessSet) -> None:
    me, k, ranks = hora.rank(), ps.size(), ps.ranks
    for dtype in DTYPES:
        x = np.arange(6, dtype=dtype) + me
        got = hora.allreduce(x, op=hora.Sum, name=f"sum.{np.dtype(dtype).name}", process_set=ps)
        want = sum(np.arange(6, dtype=np.float64) + r for r in ranks)
        np.testing.assert_allclose(got.astype(np.float64), want)
    avg = hora.allreduce(np.full(3, float(me), np.float32), name="avg", process_set=ps)
    np.testing.assert_allclose(avg, np.mean(ranks))
    mins = hora.grouped_allreduce(
        [np.array([me], np.int32), np.array([-me], np.int32)], op=hora.Min, name="g", process_set=ps
    )
    assert mins[0][0] == ranks[0] and mins[1][0] == -ranks[-1]
    gathered = hora.allgather(np.full((ps.rank() + 1, 2), me, np.int32), name="ag", process_set=ps)
    want = np.concatenate([np.full((i + 1, 2), r, np.int32) for i, r in enumerate(ranks)])
    np.testing.assert_array_equal(gathered, want)
    got = hora.broadcast(np.array([me, me], np.float64), ranks[-1], name="bc", process_set=ps)
    np.testing.assert_array_equal(got, [ranks[-1]] * 2)
    sent = np.array([me * 100 + r for r in ranks], np.int64)
    received = hora.alltoall(sent, name="a2a", process_set=ps)
    np.testing.assert_array_equal(received, [r * 100 + me for r in ranks])
    block = hora.reducescatter(
        np.ones((2 * k, 3), np.float32), op=hora.Sum, name="rs", process_set=ps
    )
    np.testing.assert_array_equal(block, np.full((2, 3), k, np.float32))
    hora.barrier(process_set=ps)
    assert hora.join(process_set=ps) in ranks


def check_outside(ps: ProcessSet) -> None:
    with pytest.raises(
        hora.InvalidArgumentError, match=rf"not a member of process set {ps.process_set_id}"
    ):
        hora.allreduce(np.ones(2, np.float32), name="x", process_set=ps)
    with pytest.raises(hora.InvalidArgumentError, match="not a member"):
        hora.barrier(process_set=ps)


def test_static_sets(job_size):
    sets = [ProcessSet(list(reversed(ranks))) for ranks in shapes(job_size)]
    hora.init(process_sets=sets)
    try:
        assert [ps.process_set_id for ps in sets] == list(range(1, len(sets) + 1))
        assert hora.global_process_set.ranks == list(range(job_size))
        assert hora.global_process_set.process_set_id == 0
        for ps in sets:
            assert ps.ranks == sorted(ps.ranks)
            assert ps.included() == (hora.rank() in ps.ranks)
            if ps.included():
                assert ps.rank() == ps.ranks.index(hora.rank())
                check_set(ps)
            else:
                assert ps.rank() == -1
                check_outside(ps)
        # The job goes on, on the global set.
        np.testing.assert_allclose(
            hora.allreduce(np.ones(2, np.float32), op=hora.Sum, name="after"), job_size
        )
    finally:
        hora.shutdown()


def test_static_sets_given_twice_raise(job_size):
    with pytest.raises(ValueError, match="given twice"):
        hora.init(process_sets=[ProcessSet([0]), ProcessSet([0])])
    assert not hora.is_initialized()
    with pytest.raises(ValueError, match="integer ranks"):
        ProcessSet([0, "1"])


def test_static_sets_cannot_change(job_size):
    hora.init()
    try:
        with pytest.raises(hora.FailedPreconditionError, match="static"):
            hora.add_process_set([0])
    finally:
        hora.shutdown()


def test_dynamic_sets(job_size):
    hora.init(process_sets="dynamic")
    try:
        for ranks in shapes(job_size):
            ps = hora.add_process_set(ranks)
            assert ps.process_set_id > 0
            if ps.included():
                check_set(ps)
            else:
                check_outside(ps)
            assert hora.remove_process_set(ps)
            assert ps.process_set_id is None
            with pytest.raises(ValueError, match="not registered"):
                hora.allreduce(np.ones(1, np.float32), name="gone", process_set=ps)
        assert not hora.remove_process_set(hora.global_process_set)
        with pytest.raises(hora.InvalidArgumentError, match="not a rank of this job"):
            hora.add_process_set([0, job_size])
        with pytest.raises(hora.InvalidArgumentError, match="at least one rank"):
            hora.add_process_set([])
        if job_size > 1:
            with pytest.raises(hora.MismatchError, match="asked to add"):
                hora.add_process_set([hora.rank()])
        np.testing.assert_allclose(
            hora.allreduce(np.ones(2, np.float32), op=hora.Sum, name="after"), job_size
        )
    finally:
        hora.shutdown()
