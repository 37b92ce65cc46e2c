"""hora.torch with op=Adasum: allreduce and grouped_allreduce against the NumPy reference, and
DistributedOptimizer(op=Adasum) against a single-process simulation of every rank written from
the paper and Horovod's Adasum optimizer: each rank steps its own optimizer (its own momentum)
on its shard from the shared parameters, the deltas are combined by the Adasum tree, and every
rank continues from start + combined delta."""

import numpy as np
import pytest
import torch
from adasum_reference import adasum_tree

import hora.torch as hvd

STEPS = 3


@pytest.fixture(scope="module", autouse=True)
def job():
    hvd.init()
    yield
    hvd.shutdown()


def local(rank, n, dtype, salt=0):
    g = torch.Generator().manual_seed(100 * salt + rank)
    return torch.randn(n, generator=g).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_allreduce_and_grouped(dtype):
    rank, size = hvd.rank(), hvd.size()
    tol = {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(dtype, 1e-5)
    out = hvd.allreduce(local(rank, 333, dtype), op=hvd.Adasum, name=f"t.{dtype}")
    want = adasum_tree([local(r, 333, dtype).double().numpy() for r in range(size)])
    np.testing.assert_allclose(out.double().numpy(), want, atol=tol * max(1, abs(want).max()))
    outs = hvd.grouped_allreduce(
        [local(rank, n, dtype, salt=n) for n in (5, 64, 1)], op=hvd.Adasum, name=f"g.{dtype}"
    )
    for n, o in zip((5, 64, 1), outs, strict=True):
        want = adasum_tree([local(r, n, dtype, salt=n).double().numpy() for r in range(size)])
        np.testing.assert_allclose(o.double().numpy(), want, atol=tol * max(1, abs(want).max()))


def test_int_refused():
    with pytest.raises(hvd.InvalidArgumentError, match="adasum is not defined for int64"):
        hvd.allreduce(torch.arange(4), op=hvd.Adasum, name="t.int")


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)
    ).double()


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(4, 6, generator=g).double(), torch.randn(4, 3, generator=g).double()


def loss_of(m, rank, step):
    x, y = batch(rank, step)
    return torch.nn.functional.mse_loss(m(x), y)


def make_optimizer(kind, params):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)
    return torch.optim.Adam(params, lr=0.05)


def reference(kind, size):
    """What every rank should hold after STEPS steps (single process, float64)."""
    models = [model() for _ in range(size)]
    opts = [make_optimizer(kind, m.parameters()) for m in models]
    shared = [p.detach().clone() for p in models[0].parameters()]
    for step in range(STEPS):
        deltas = []
        for r, (m, opt) in enumerate(zip(models, opts, strict=True)):
            with torch.no_grad():
                for p, s in zip(m.parameters(), shared, strict=True):
                    p.copy_(s)
            opt.zero_grad()
            loss_of(m, r, step).backward()
            opt.step()
            deltas.append([(p.detach() - s) for p, s in zip(m.parameters(), shared, strict=True)])
        for i, s in enumerate(shared):
            combined = adasum_tree([d[i].numpy() for d in deltas])
            shared[i] = s + torch.from_numpy(combined).reshape(s.shape)
    return shared


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_optimizer_matches_reference(kind):
    rank, size = hvd.rank(), hvd.size()
    m = model()
    opt = hvd.DistributedOptimizer(
        make_optimizer(kind, m.parameters()), named_parameters=m.named_parameters(), op=hvd.Adasum
    )
    for step in range(STEPS):
        opt.zero_grad()
        loss_of(m, rank, step).backward()
        opt.step()
    for p, want in zip(m.parameters(), reference(kind, size), strict=True):
        torch.testing.assert_close(p.detach(), want, rtol=1e-9, atol=1e-12)
    # identical on every rank
    flat = torch.cat([p.detach().ravel() for p in m.parameters()])
    lo = hvd.allreduce(flat, op=hvd.Min, name=f"opt.min.{kind}")
    hi = hvd.allreduce(flat, op=hvd.Max, name=f"opt.max.{kind}")
    assert torch.equal(lo, flat) and torch.equal(hi, flat)


def test_optimizer_refuses_options_that_do_not_apply():
    m = model()
    with pytest.raises(ValueError, match="compression and gradient_predivide_factor"):
        hvd.DistributedOptimizer(
            torch.optim.SGD(m.parameters(), lr=0.1),
            named_parameters=m.named_parameters(),
            op=hvd.Adasum,
            compression=hvd.Compression.fp16,
        )
