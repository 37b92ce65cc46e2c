"""hora.torch's training on process sets: a DistributedOptimizer per set (two data-parallel
groups training different models at once, each equal to its own one-process run on the
group's concatenated batch), broadcast_parameters / broadcast_optimizer_state /
broadcast_object / allgather_object with a set and a member root, SyncBatchNorm over a set,
join and barrier on a set. Each test owns init and shutdown."""

import models
import numpy as np
import pytest
import torch
from helpers import shapes

import hora.torch as hvd


@pytest.fixture
def halves(job_size):
    """The even ranks and the odd ranks as two sets (a job of one rank has no such sets)."""
    if job_size == 1:
        pytest.skip("a job of one rank has no set but the global one")
    even, odd = hvd.ProcessSet(list(range(0, job_size, 2))), hvd.ProcessSet([1, 3][: job_size // 2])
    hvd.init(process_sets=[even, odd])
    yield even if hvd.rank() % 2 == 0 else odd
    hvd.shutdown()


def train(model, group, name, steps, process_set=None):
    """``steps`` SGD-with-momentum steps of ``model`` on ``group``'s shard of each global batch
    (all of it for the one-process reference, where ``process_set`` is None)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if process_set is not None:
        opt = hvd.DistributedOptimizer(
            opt, named_parameters=model.named_parameters(), process_set=process_set
        )
    for step in range(steps):
        x, y = models.data(name, step)
        if process_set is not None:
            x, y = (models.shard(t, group.rank(), group.size()) for t in (x, y))
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model


def test_optimizer_per_set_trains_its_own_model(halves):
    # Even ranks train the MLP, odd ranks the CNN, at the same time.
    name = "mlp" if hvd.rank() % 2 == 0 else "cnn"
    make = models.mlp if name == "mlp" else models.cnn
    trained = train(make(), halves, name, 3, process_set=halves)
    reference = train(make(), halves, name, 3)
    assert models.max_rel_diff(trained, reference) < 1e-5
    # Every member ends with the same parameters.
    flat = torch.cat([p.detach().flatten() for p in trained.parameters()])
    np.testing.assert_array_equal(
        hvd.broadcast(flat, halves.ranks[0], name="check", process_set=halves).numpy(),
        flat.numpy(),
    )


def test_sparse_gradients_average_over_the_set(halves):
    # Member i looks up rows i and i + 1; the step applies the set's average gradient.
    k = halves.size()
    torch.manual_seed(0)
    emb = torch.nn.Embedding(k + 1, 3, sparse=True).double()
    reference = models.clone(emb)
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(emb.parameters(), lr=0.5),
        named_parameters=emb.named_parameters(),
        process_set=halves,
    )
    i = halves.rank()
    emb(torch.tensor([i, i + 1])).sum().backward()
    opt.step()
    sum(reference(torch.tensor([j, j + 1])).sum() for j in range(k)).backward()
    with torch.no_grad():
        reference.weight -= 0.5 * reference.weight.grad.to_dense() / k
    torch.testing.assert_close(emb.weight, reference.weight)


def _adam_state_of(rank):
    """Rank ``rank``'s model and Adam optimizer after one step (its own seed)."""
    torch.manual_seed(rank)
    model = torch.nn.Linear(4, 2).double()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.ones(3, 4, dtype=torch.float64)).sum().backward()
    opt.step()
    return model, opt


def test_broadcasts_with_a_set_and_a_member_root(halves):
    root = halves.ranks[-1]
    model, opt = _adam_state_of(hvd.rank())
    if hvd.rank() != root:
        opt = torch.optim.Adam(model.parameters(), lr=0.5)  # no state yet
    hvd.broadcast_parameters(model.state_dict(), root_rank=root, process_set=halves)
    hvd.broadcast_optimizer_state(opt, root_rank=root, process_set=halves)
    want_model, want_opt = _adam_state_of(root)
    for p, q in zip(model.parameters(), want_model.parameters(), strict=True):
        assert torch.equal(p, q)
    got, want = opt.state_dict(), want_opt.state_dict()
    assert got["param_groups"][0]["lr"] == want["param_groups"][0]["lr"]
    for index, entries in want["state"].items():
        for key, value in entries.items():
            assert torch.equal(torch.as_tensor(got["state"][index][key]), torch.as_tensor(value))
    obj = hvd.broadcast_object({"from": hvd.rank()}, root_rank=root, process_set=halves)
    assert obj == {"from": root}
    assert hvd.allgather_object(hvd.rank(), process_set=halves) == halves.ranks


def test_sync_batch_norm_over_a_set(job_size):
    sets = [hvd.ProcessSet(ranks) for ranks in shapes(job_size)]
    hvd.init(process_sets=sets)
    try:
        # Every rank makes every layer, in the same order, so that their tensor names agree.
        every = [*sets, hvd.global_process_set]
        layers = [hvd.SyncBatchNorm(3, process_set=ps).double() for ps in every]
        for ps, layer in zip(every, layers, strict=True):
            if ps.included():
                _check_sync_batch_norm(ps, layer)
    finally:
        hvd.shutdown()


def _inputs(rank):
    g = torch.Generator().manual_seed(rank)
    return torch.randn(4, 3, 5, generator=g, dtype=torch.float64) * (rank + 1)


def _check_sync_batch_norm(ps, sync):
    local = torch.nn.BatchNorm1d(3).double()
    x = _inputs(hvd.rank()).requires_grad_()
    everyone = torch.cat([_inputs(r) for r in ps.ranks]).requires_grad_()
    weights = torch.cat([torch.full((4, 3, 5), r + 1.0, dtype=torch.float64) for r in ps.ranks])
    out = sync(x)
    (out * (hvd.rank() + 1.0)).sum().backward()
    want = local(everyone)
    (want * weights).sum().backward()
    rows = slice(4 * ps.rank(), 4 * ps.rank() + 4)
    torch.testing.assert_close(out, want[rows], rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(x.grad, everyone.grad[rows], rtol=1e-8, atol=1e-8)
    torch.testing.assert_close(sync.running_mean, local.running_mean)
    torch.testing.assert_close(sync.running_var, local.running_var)
    # The affine parameters' gradients are this member's share; summed over the set they
    # are the whole batch's.
    grad = hvd.allreduce(sync.weight.grad, op=hvd.Sum, name="bn.w", process_set=ps)
    torch.testing.assert_close(grad, local.weight.grad)


def test_join_and_barrier_on_a_set(halves):
    hvd.barrier(process_set=halves)
    if halves.rank() == 0:
        last = hvd.join(process_set=halves)
    else:
        # The member that joined contributes zeros until everyone joined.
        got = hvd.allreduce(torch.ones(2), op=hvd.Sum, name="after_join", process_set=halves)
        assert got.tolist() == [halves.size() - 1] * 2
        last = hvd.join(process_set=halves)
    assert last in halves.ranks
    assert hvd.allgather_object(last, process_set=halves) == [last] * halves.size()
    hvd.barrier(process_set=halves)
