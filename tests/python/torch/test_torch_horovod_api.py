"""Horovod 0.28 API details of hora.torch, checked against NumPy: DistributedOptimizer's
default names, broadcast_optimizer_state's zero gradients, grouped allgather and
reducescatter, sparse_allreduce_async, reducescatter's scale factors and user compressors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import hora.torch as hvd


@pytest.fixture(scope="module", autouse=True)
def job():
    hvd.init()
    yield
    hvd.shutdown()


def rows_of(rank, count, cols=3, salt=0):
    """Rank ``rank``'s input: ``count`` rows, exact small integers as float32."""
    i = np.arange(count * cols, dtype=np.float32).reshape(count, cols)
    return (i % 7 + rank * 3 + salt).astype(np.float32)


# ---- DistributedOptimizer and broadcast_optimizer_state -------------------------------------


def two_group_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    model[0].bias.requires_grad_(False)
    groups = [
        {"params": list(model[0].parameters())},
        {"params": list(model[1].parameters()), "lr": 0.05},
    ]
    return model, groups


def test_unnamed_parameters_get_horovods_names():
    model, groups = two_group_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(groups, lr=0.1))
    names = {opt._parameter_names[p] for p in opt._parameter_names}
    # Group 0's bias needs no gradient: it has a name in Horovod's numbering but no allreduce.
    assert names == {"allreduce.noname.0.0", "allreduce.noname.1.0", "allreduce.noname.1.1"}
    assert opt._parameter_names[model[1].bias] == "allreduce.noname.1.1"
    # The names are the same on every rank, so a step reduces.
    before = [p.detach().clone() for p in model.parameters()]
    torch.manual_seed(hvd.rank())
    opt.zero_grad()
    F.mse_loss(model(torch.randn(5, 4)), torch.zeros(5, 2)).backward()
    opt.step()
    assert not torch.equal(before[0], model[0].weight)
    gathered = hvd.allgather_object([p.detach() for p in model.parameters()])
    for theirs in gathered:
        for a, b in zip(theirs, gathered[0], strict=True):
            assert torch.equal(a, b)


def test_named_parameters_are_the_names():
    model, groups = two_group_model()
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(groups, lr=0.1), named_parameters=model.named_parameters()
    )
    assert opt._parameter_names[model[1].weight] == "1.weight"


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "distributed"])
def test_broadcast_optimizer_state_leaves_zero_grads(wrapped):
    model, groups = two_group_model()
    opt = torch.optim.Adam(groups, lr=0.01)
    if wrapped:
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for p in model.parameters():
        if p.requires_grad:
            assert p.grad is not None and torch.count_nonzero(p.grad) == 0
            assert p.grad.shape == p.shape
        else:
            assert p.grad is None


def test_broadcast_optimizer_state_keeps_grads_of_a_stepped_optimizer():
    model, groups = two_group_model()
    opt = torch.optim.SGD(groups, lr=0.1, momentum=0.9)
    F.mse_loss(model(torch.ones(2, 4)), torch.zeros(2, 2)).backward()
    opt.step()
    grad = model[1].weight.grad.clone()
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert torch.equal(model[1].weight.grad, grad)
