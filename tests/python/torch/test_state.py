"""broadcast_parameters and broadcast_optimizer_state restore an identical model and
optimizer on every rank, for every optimizer class in torch.optim that has state; and
SyncBatchNorm matches BatchNorm over the whole batch."""

import inspect

import pytest
import torch
import torch.nn.functional as F
from models import data, mlp, shard

import hora.torch as hvd


@pytest.fixture(scope="module", autouse=True)
def job():
    hvd.init()
    yield
    hvd.shutdown()


def optimizer_classes():
    skip = {"Optimizer", "LBFGS", "SparseAdam"}  # LBFGS: closure-driven; SparseAdam: sparse only
    return [
        c
        for name, c in sorted(vars(torch.optim).items())
        if inspect.isclass(c) and issubclass(c, torch.optim.Optimizer) and name not in skip
    ]


def same_on_every_rank(tensors):
    gathered = hvd.allgather_object([t.detach().clone() for t in tensors])
    return all(
        all(torch.equal(a, b) for a, b in zip(g, gathered[0], strict=True)) for g in gathered
    )


@pytest.mark.parametrize("cls", optimizer_classes(), ids=lambda c: c.__name__)
def test_broadcast_optimizer_state(cls):
    rank = hvd.rank()
    torch.manual_seed(rank)  # different weights on every rank
    model = mlp()
    kwargs = {"lr": 0.01} if "lr" in inspect.signature(cls).parameters else {}
    params = list(model.parameters())
    if cls.__name__ == "Muon":  # Muon optimises matrices only
        params = [p for p in params if p.dim() == 2]
        for p in model.parameters():
            p.requires_grad_(p.dim() == 2)
    opt = cls(params, **kwargs)
    for step in range(rank + 1):  # a different state on every rank
        x, y = data("mlp", step + rank)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    root_state = hvd.broadcast_object(opt.state_dict(), root_rank=0, name="state.check")
    mine = opt.state_dict()
    assert mine["param_groups"] == root_state["param_groups"]
    for k, v in root_state["state"].items():
        for key, value in v.items():
            assert torch.equal(torch.as_tensor(mine["state"][k][key]), torch.as_tensor(value))
    # One more identical step keeps every rank identical.
    x, y = data("mlp", 99)
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    assert same_on_every_rank(list(model.parameters()))


def test_broadcast_parameters_named_and_state_dict():
    torch.manual_seed(hvd.rank())
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    model(torch.randn(5, 3))  # running stats differ per rank
    hvd.broadcast_parameters(model.state_dict(), root_rank=hvd.size() - 1)
    assert same_on_every_rank(list(model.state_dict().values()))
    torch.manual_seed(hvd.rank() + 10)
    other = torch.nn.Linear(3, 3)
    hvd.broadcast_parameters(other.named_parameters(), root_rank=0)
    assert same_on_every_rank(list(other.parameters()))


@pytest.mark.parametrize("dims", [2, 4])
def test_sync_batch_norm_matches_full_batch(dims):
    rank, size = hvd.rank(), hvd.size()
    torch.manual_seed(0)
    shape = (4 * size, 3) if dims == 2 else (2 * size, 3, 4, 4)
    x = torch.randn(shape, dtype=torch.float64)
    w = torch.randn(shape, dtype=torch.float64)
    bn = torch.nn.BatchNorm1d(3) if dims == 2 else torch.nn.BatchNorm2d(3)
    bn = bn.double()
    sync = hvd.SyncBatchNorm(3).double()
    xf = x.clone().requires_grad_()
    (bn(xf) * w).sum().backward()
    xs = shard(x, rank, size).clone().requires_grad_()
    (sync(xs) * shard(w, rank, size)).sum().backward()
    assert torch.allclose(xs.grad, shard(xf.grad, rank, size), atol=1e-10)
    # The affine parameters' gradients are per-rank partial sums: their sum is the full one.
    wg = hvd.allreduce(sync.weight.grad, op=hvd.Sum)
    assert torch.allclose(wg, bn.weight.grad, atol=1e-10)
    assert torch.allclose(sync.running_mean, bn.running_mean, atol=1e-12)
    assert torch.allclose(sync.running_var, bn.running_var, atol=1e-12)
    sync.eval()
    bn.eval()
    assert torch.allclose(sync(x), bn(x), atol=1e-12)
