"""DistributedOptimizer: N ranks at batch B/N train the same model as one process at batch B
(SGD+momentum, Adam; backward_passes_per_step 1 and 2; fp16 compression within a stated
tolerance; GradScaler with synchronize/unscale_/skip_synchronize), join with uneven data, and
misuse errors."""

import pytest
import torch
import torch.nn.functional as F
from models import clone, cnn, data, max_rel_diff, mlp, shard

import hora.torch as hvd

STEPS = 3


@pytest.fixture(scope="module", autouse=True)
def job():
    hvd.init()
    yield
    hvd.shutdown()


def optimizer_of(kind, params):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)
    return torch.optim.Adam(params, lr=0.01)


def train_reference(model, model_name, kind, steps=STEPS):
    opt = optimizer_of(kind, model.parameters())
    for step in range(steps):
        x, y = data(model_name, step)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return model


def train_distributed(
    model, model_name, kind, passes=1, compression=hvd.Compression.none, steps=STEPS, prefix=""
):
    rank, size = hvd.rank(), hvd.size()
    opt = hvd.DistributedOptimizer(
        optimizer_of(kind, model.parameters()),
        named_parameters=[(prefix + n, p) for n, p in model.named_parameters()],
        backward_passes_per_step=passes,
        compression=compression,
    )
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    for step in range(steps):
        x, y = data(model_name, step)
        x, y = shard(x, rank, size), shard(y, rank, size)
        opt.zero_grad()
        for xm, ym in zip(x.chunk(passes), y.chunk(passes), strict=True):
            (F.cross_entropy(model(xm), ym) / passes).backward()
        opt.step()
    return model


@pytest.mark.parametrize("model_name", ["mlp", "cnn"])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("passes", [1, 2])
def test_equivalence(model_name, kind, passes):
    make = mlp if model_name == "mlp" else cnn
    ref = train_reference(make(), model_name, kind)
    dist = train_distributed(
        make(), model_name, kind, passes, prefix=f"{model_name}.{kind}.{passes}."
    )
    assert max_rel_diff(dist, ref) < 1e-5


def test_fp16_compression_within_tolerance():
    model = mlp().float()
    reference = clone(model)
    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(STEPS):
        x, y = data("mlp", step)
        opt_ref.zero_grad()
        F.cross_entropy(reference(x.float()), y).backward()
        opt_ref.step()
    rank, size = hvd.rank(), hvd.size()
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
        named_parameters=[("fp16." + n, p) for n, p in model.named_parameters()],
        compression=hvd.Compression.fp16,
    )
    for step in range(STEPS):
        x, y = data("mlp", step)
        opt.zero_grad()
        F.cross_entropy(model(shard(x, rank, size).float()), shard(y, rank, size)).backward()
        opt.step()
    # float16 keeps 11 significant bits: gradients round to ~5e-4 relative; after three steps
    # parameters agree to 1e-3 absolute.
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        assert torch.allclose(p, q, atol=1e-3, rtol=1e-3)


def test_grad_scaler_with_synchronize_and_clipping():
    rank, size = hvd.rank(), hvd.size()
    model = mlp().float()
    reference = clone(model)

    def run(m, opt, distributed):
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
        for step in range(STEPS):
            x, y = data("mlp", step)
            if distributed:
                x, y = shard(x, rank, size), shard(y, rank, size)
            opt.zero_grad()
            scaler.scale(F.cross_entropy(m(x.float()), y)).backward()
            if distributed:
                opt.synchronize()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            if distributed:
                with opt.skip_synchronize():
                    scaler.step(opt)
            else:
                scaler.step(opt)
            scaler.update()

    run(reference, torch.optim.SGD(reference.parameters(), lr=0.1), False)
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1),
        named_parameters=[("amp." + n, p) for n, p in model.named_parameters()],
    )
    run(model, opt, True)
    assert max_rel_diff(model, reference) < 1e-4


def test_unused_parameters_and_set_to_none():
    rank, size = hvd.rank(), hvd.size()
    torch.manual_seed(0)
    used, unused = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)
    params = list(used.named_parameters(prefix="used")) + list(
        unused.named_parameters(prefix="unused")
    )
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD([p for _, p in params], lr=0.1), named_parameters=params
    )
    before = unused.weight.detach().clone()
    for _ in range(2):
        opt.zero_grad(set_to_none=True)
        # Only rank 0 uses the second layer; the others reduce a zero gradient for it.
        out = used(torch.ones(1, 4))
        if rank == 0:
            out = out + unused(torch.ones(1, 4))
        out.sum().backward()
        opt.step()
    grads = hvd.allgather_object(unused.weight.grad)
    assert all(torch.equal(g, grads[0]) for g in grads)
    assert torch.allclose(grads[0], torch.ones(2, 4) / size)
    assert not torch.equal(unused.weight.detach(), before)


def test_non_contiguous_gradient_takes_the_general_hook():
    # A transposed parameter gets a gradient of the same strides: the one-call hook leaves it
    # to the Python hook, which reduces a contiguous copy as p.grad.
    rank, size = hvd.rank(), hvd.size()
    w = torch.nn.Parameter(torch.zeros(4, 3, dtype=torch.float64).t())
    b = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    assert not w.is_contiguous()
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD([w, b], lr=1.0), named_parameters=[("w", w), ("b", b)]
    )
    x = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    for _ in range(2):
        opt.zero_grad()
        ((w * x).sum() * (rank + 1) + b.sum() * (rank + 1)).backward()
        opt.synchronize()
        assert w.grad.is_contiguous()
        assert torch.allclose(w.grad, x * (size + 1) / 2, rtol=1e-15, atol=0)
        assert torch.allclose(
            b.grad, torch.full((3,), (size + 1) / 2, dtype=torch.float64), rtol=1e-15, atol=0
        )
        with opt.skip_synchronize():
            opt.step()


def test_join_with_uneven_data():
    rank, size = hvd.rank(), hvd.size()
    for first in range(size):
        model = mlp()
        opt = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1),
            named_parameters=[(f"join{first}." + n, p) for n, p in model.named_parameters()],
        )
        batches = 1 if rank == first else 2
        for step in range(batches):
            x, y = data("mlp", step)
            opt.zero_grad()
            F.cross_entropy(model(shard(x, rank, size)), shard(y, rank, size)).backward()
            opt.step()
        last = hvd.join()
        assert all(v == last for v in hvd.allgather_object(last))
        if size > 1:
            assert last != first
        # The ranks that trained the second step agree; the one that joined first stopped
        # after the first (Horovod's semantics: a joined rank contributes zeros, trains not).
        states = hvd.allgather_object([p.detach() for p in model.parameters()])
        busy = [s for r, s in enumerate(states) if r != first]
        for other in busy:
            assert all(torch.equal(a, b) for a, b in zip(other, busy[0], strict=True))


def test_misuse_is_a_clear_error():
    model = torch.nn.Linear(3, 2)
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1),
        named_parameters=model.named_parameters(),
        op=hvd.Sum,
    )
    model(torch.ones(1, 3)).sum().backward()
    with pytest.raises(hvd.FailedPreconditionError, match="zero_grad"):
        opt.zero_grad()
    opt.step()
    with pytest.raises(hvd.FailedPreconditionError, match="without a backward pass"):
        opt.step()
    with pytest.raises(ValueError, match="appears twice"):
        hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1),
            named_parameters=[("w", model.weight), ("w", model.bias)],
        )
    with pytest.raises(ValueError, match="not in named_parameters"):
        hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=[("w", model.weight)]
        )
    with pytest.raises(ValueError, match="Average or Sum"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), op=hvd.Max)
    assert isinstance(opt, torch.optim.SGD)


def test_groups_and_predivide():
    rank, size = hvd.rank(), hvd.size()
    for kwargs in ({"num_groups": 2}, {"gradient_predivide_factor": 2.0}):
        model = mlp()
        ref = train_reference(mlp(), "mlp", "sgd", steps=1)
        tag = ".".join(kwargs)
        opt = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
            named_parameters=[(tag + n, p) for n, p in model.named_parameters()],
            **kwargs,
        )
        x, y = data("mlp", 0)
        opt.zero_grad()
        F.cross_entropy(model(shard(x, rank, size)), shard(y, rank, size)).backward()
        opt.step()
        assert max_rel_diff(model, ref) < 1e-5, kwargs


def test_sparse_gradients():
    rank, size = hvd.rank(), hvd.size()
    for dense in (False, True):
        torch.manual_seed(0)
        emb = torch.nn.Embedding(10, 3, sparse=True).double()
        ref = clone(emb)
        opt = hvd.DistributedOptimizer(
            torch.optim.SGD(emb.parameters(), lr=0.5),
            named_parameters=[(f"emb{dense}", emb.weight)],
            sparse_as_dense=dense,
        )
        idx = torch.tensor([[1, 2, 3, 4], [2, 5, 7, 9], [0, 1, 1, 8], [3, 3, 4, 6]])
        opt.zero_grad()
        emb(idx[rank % 4]).sum().backward()
        opt.step()
        ropt = torch.optim.SGD(ref.parameters(), lr=0.5)
        ref(idx[[r % 4 for r in range(size)]]).sum().div(size).backward()
        ropt.step()
        assert torch.allclose(emb.weight, ref.weight), dense
