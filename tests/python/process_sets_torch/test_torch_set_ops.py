"""hora.torch's collectives on process sets: every collective (blocking and async, in place
and not, grouped) and several dtypes on every set shape that fits the job, against NumPy;
the gradients of the differentiable ones; a non-member's error. Each test owns init and
shutdown (the sets are part of init)."""

import numpy as np
import pytest
import torch
from helpers import shapes

import hora.torch as hvd

DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16]


@pytest.fixture
def sets(job_size):
    """The sets that fit the job, registered, with the global set last (at N = 1 it is the
    only one: a set of every rank is refused)."""
    made = [hvd.ProcessSet(ranks) for ranks in shapes(job_size)]
    hvd.init(process_sets=made)
    yield [*made, hvd.global_process_set]
    hvd.shutdown()


class Negated(hvd.Compressor):
    """Sends -tensor and negates the result back (exact), so a result shows that both ran."""

    compress = staticmethod(lambda tensor: (-tensor, None))
    decompress = staticmethod(lambda tensor, ctx: -tensor)


def check_allreduce(ps: hvd.ProcessSet) -> None:
    me, ranks = hvd.rank(), ps.ranks
    for dtype in DTYPES:
        want = sum(np.arange(6, dtype=np.float64) + r for r in ranks)
        x = torch.arange(6).to(dtype) + me
        got = hvd.allreduce(x, op=hvd.Sum, name=f"sum.{dtype}", process_set=ps)
        np.testing.assert_allclose(got.double().numpy(), want)
        got = hvd.synchronize(hvd.allreduce_async(x, name=f"a.{dtype}", op=hvd.Sum, process_set=ps))
        np.testing.assert_allclose(got.double().numpy(), want)
        hvd.allreduce_(x, op=hvd.Sum, name=f"inplace.{dtype}", process_set=ps)
        np.testing.assert_allclose(x.double().numpy(), want)
    avg = hvd.allreduce(torch.full((3,), float(me)), name="avg", process_set=ps)
    np.testing.assert_allclose(avg.numpy(), np.mean(ranks))
    pair = [torch.tensor([me], dtype=torch.int32), torch.tensor([-me], dtype=torch.int32)]
    mins = hvd.grouped_allreduce(pair, op=hvd.Min, name="gmin", process_set=ps)
    assert int(mins[0]) == ranks[0] and int(mins[1]) == -ranks[-1]
    hvd.grouped_allreduce_(pair, op=hvd.Max, name="gmax", process_set=ps)
    assert int(pair[0]) == ranks[-1] and int(pair[1]) == -ranks[0]
    handle = hvd.grouped_allreduce_async([torch.ones(2), torch.ones(3)], op=hvd.Sum, process_set=ps)
    assert [t.tolist() for t in hvd.synchronize(handle)] == [[len(ranks)] * 2, [len(ranks)] * 3]
    # The built-in compression (in the engine) and a user's Compressor (around the call).
    for compression in (hvd.Compression.fp16, Negated):
        tag = compression.__name__
        got = hvd.allreduce(
            torch.full((4,), float(me)), name=f"c.{tag}", compression=compression, process_set=ps
        )
        np.testing.assert_allclose(got.numpy(), np.mean(ranks))
        (got,) = hvd.grouped_allreduce(
            [torch.full((2,), float(me))], op=hvd.Sum, compression=compression, process_set=ps
        )
        np.testing.assert_allclose(got.numpy(), sum(ranks))


def check_allgather_broadcast(ps: hvd.ProcessSet) -> None:
    me, ranks = hvd.rank(), ps.ranks
    for dtype in DTYPES:
        x = torch.full((ps.rank() + 1, 2), me).to(dtype)
        got = hvd.allgather(x, name=f"ag.{dtype}", process_set=ps)
        want = np.concatenate([np.full((i + 1, 2), r) for i, r in enumerate(ranks)])
        np.testing.assert_array_equal(got.double().numpy(), want)
        got = hvd.broadcast(torch.tensor([me, me]).to(dtype), ranks[-1], f"bc.{dtype}", ps)
        np.testing.assert_array_equal(got.double().numpy(), [ranks[-1]] * 2)
    gathered = hvd.grouped_allgather(
        [torch.tensor([me]), torch.tensor([[me, -me]])], name="gag", process_set=ps
    )
    assert gathered[0].tolist() == ranks
    assert gathered[1].tolist() == [[r, -r] for r in ranks]
    y = torch.tensor([float(me)])
    hvd.broadcast_(y, ranks[0], name="bc_", process_set=ps)
    assert y.tolist() == [ranks[0]]
    y.fill_(me)
    handle = hvd.broadcast_async_(y, ranks[-1], name="bca_", process_set=ps)
    hvd.synchronize(handle)
    assert y.tolist() == [ranks[-1]]


def check_alltoall_reducescatter(ps: hvd.ProcessSet) -> None:
    me, k, ranks = hvd.rank(), ps.size(), ps.ranks
    for dtype in DTYPES:
        sent = torch.tensor([me * 100 + r for r in ranks]).to(dtype)
        received = hvd.alltoall(sent, name=f"a2a.{dtype}", process_set=ps)
        np.testing.assert_array_equal(received.double().numpy(), [r * 100 + me for r in ranks])
        block = hvd.reducescatter(torch.ones(2 * k, 3).to(dtype), op=hvd.Sum, process_set=ps)
        np.testing.assert_array_equal(block.double().numpy(), np.full((2, 3), k))
    # Uneven splits: member i sends i + 1 rows to every member.
    rows = ps.rank() + 1
    out, splits = hvd.alltoall(
        torch.full((rows * k,), me), splits=[rows] * k, name="a2a_splits", process_set=ps
    )
    assert splits.tolist() == [i + 1 for i in range(k)]
    assert out.tolist() == [r for i, r in enumerate(ranks) for _ in range(i + 1)]
    # Horovod 0.28's order: (tensor, name, compression, op, process_set, prescale, postscale).
    scaled = hvd.reducescatter(torch.ones(k), "rs_pos", None, hvd.Sum, ps, 2.0, 0.5)
    assert scaled.tolist() == [k]
    avg = hvd.reducescatter(torch.full((k, 2), float(me)), name="rs_avg", process_set=ps)
    np.testing.assert_allclose(avg.numpy(), np.full((1, 2), np.mean(ranks)))
    blocks = hvd.grouped_reducescatter(
        [torch.ones(k, 1), torch.ones(2 * k)], op=hvd.Sum, name="grs", process_set=ps
    )
    assert blocks[0].tolist() == [[k]] and blocks[1].tolist() == [k, k]


def check_sparse_and_control(ps: hvd.ProcessSet) -> None:
    me, k, ranks = hvd.rank(), ps.size(), ps.ranks
    sparse = torch.sparse_coo_tensor([[me]], [1.0], (8,))
    handle = hvd.sparse_allreduce_async(sparse, name="sparse", process_set=ps)
    dense = hvd.synchronize(handle).to_dense()
    np.testing.assert_allclose(dense.numpy(), [1.0 / k if i in ranks else 0.0 for i in range(8)])
    hvd.barrier(process_set=ps)
    assert hvd.join(process_set=ps) in ranks


def test_every_collective_on_every_set(sets):
    for ps in sets:
        if not ps.included():
            continue
        check_allreduce(ps)
        check_allgather_broadcast(ps)
        check_alltoall_reducescatter(ps)
        check_sparse_and_control(ps)


def check_gradients(ps: hvd.ProcessSet) -> None:
    me, k, ranks, i = hvd.rank(), ps.size(), ps.ranks, ps.rank()
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    hvd.allreduce(x, op=hvd.Sum, name="g.sum", process_set=ps).sum().backward()
    assert x.grad.tolist() == [k] * 3
    x.grad = None
    hvd.allreduce(x, name="g.avg", process_set=ps).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.0)
    # allgather: every member weighs the gathered rows alike; this rank's rows get the sum
    # over the set of their weights, found at its index in the set.
    x = torch.ones(i + 1, 2, dtype=torch.float64, requires_grad=True)
    total = k * (k + 1) // 2
    weights = torch.arange(total * 2, dtype=torch.float64).view(total, 2)
    (hvd.allgather(x, name="g.ag", process_set=ps) * weights).sum().backward()
    start = i * (i + 1) // 2
    np.testing.assert_allclose(x.grad.numpy(), k * weights[start : start + i + 1].numpy())
    x.grad = None
    (out,) = hvd.grouped_allgather([x], name="g.gag", process_set=ps)
    (out * weights).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), k * weights[start : start + i + 1].numpy())
    # broadcast: the root (a global rank) gets the set's sum, the others zero.
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    hvd.broadcast(x, ranks[-1], name="g.bc", process_set=ps).sum().backward()
    assert x.grad.tolist() == [k if me == ranks[-1] else 0] * 2
    # alltoall: the rows sent to member j come back with member j's weight.
    x = torch.ones(2 * k, dtype=torch.float64, requires_grad=True)
    (hvd.alltoall(x, name="g.a2a", process_set=ps) * (me + 1)).sum().backward()
    assert x.grad.tolist() == [r + 1 for r in ranks for _ in range(2)]
    # reducescatter: Average divides by the set's size.
    for op, scale in ((hvd.Average, 1.0 / k), (hvd.Sum, 1.0)):
        x = torch.ones(2 * k, 3, dtype=torch.float64, requires_grad=True)
        hvd.reducescatter(x, name=f"g.rs.{op}", op=op, process_set=ps).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), scale)
        x.grad = None
        (block,) = hvd.grouped_reducescatter([x], name=f"g.grs.{op}", op=op, process_set=ps)
        block.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), scale)


def test_gradients_on_every_set(sets):
    for ps in sets:
        if ps.included():
            check_gradients(ps)


def test_non_member_gets_an_error(sets):
    outside = [ps for ps in sets if not ps.included()]
    for ps in outside:
        match = rf"not a member of process set {ps.process_set_id}"
        with pytest.raises(hvd.InvalidArgumentError, match=match):
            hvd.allreduce(torch.ones(2), name="x", process_set=ps)
        with pytest.raises(hvd.InvalidArgumentError, match=match):
            hvd.allgather(torch.ones(2), name="x", process_set=ps)
        with pytest.raises(hvd.InvalidArgumentError, match=match):
            hvd.broadcast_(torch.ones(2), ps.ranks[0], name="x", process_set=ps)
        with pytest.raises(hvd.InvalidArgumentError, match="not a member"):
            hvd.barrier(process_set=ps)
        model = torch.nn.Linear(2, 1)
        opt = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1),
            named_parameters=model.named_parameters(),
            process_set=ps,
        )
        with pytest.raises(hvd.InvalidArgumentError, match=match):
            model(torch.ones(1, 2)).sum().backward()
            opt.step()
    # The job goes on, on the global set.
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum, name="after").item() == hvd.size()


def test_unregistered_set_is_refused(sets):
    with pytest.raises(ValueError, match="not registered"):
        hvd.allreduce(torch.ones(1), process_set=hvd.ProcessSet([0]))
