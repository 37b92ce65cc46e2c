"""Horovod 0.28 API details of hora.torch, checked against NumPy: DistributedOptimizer's
default names, broadcast_optimizer_state's zero gradients, grouped allgather and
reducescatter, sparse_allreduce_async, reducescatter's scale factors and user compressors."""

from typing import ClassVar

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


# ---- grouped allgather and reducescatter, reducescatter's scale factors ---------------------


def block_of(rank, size, rows):
    """The rows [start, stop) of rank's reducescatter block (the first rows % size get one
    more)."""
    base, extra = divmod(rows, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def expected_reducescatter(rows, op, pre=1.0, post=1.0, salt=0):
    size, rank = hvd.size(), hvd.rank()
    total = sum(pre * rows_of(r, rows, salt=salt).astype(np.float64) for r in range(size))
    if op == hvd.Average:
        total = total / size
    start, stop = block_of(rank, size, rows)
    return (post * total)[start:stop]


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=["sum", "average"])
@pytest.mark.parametrize("scales", [(1.0, 1.0), (0.5, 3.0), (2.0, 0.25)], ids=str)
def test_reducescatter_scale_factors_match_numpy(op, scales):
    pre, post = scales
    rows = 2 * hvd.size() + 1
    x = torch.from_numpy(rows_of(hvd.rank(), rows))
    got = hvd.reducescatter(
        x, name=f"rs.scaled.{op}.{pre}", op=op, prescale_factor=pre, postscale_factor=post
    )
    np.testing.assert_allclose(got.numpy(), expected_reducescatter(rows, op, pre, post), rtol=1e-6)
    h = hvd.reducescatter_async(x, op=op, prescale_factor=pre, postscale_factor=post)
    np.testing.assert_allclose(
        hvd.synchronize(h).numpy(), expected_reducescatter(rows, op, pre, post), rtol=1e-6
    )


def test_reducescatter_scale_factors_in_the_gradient():
    rows = hvd.size() * 2
    x = torch.from_numpy(rows_of(hvd.rank(), rows)).requires_grad_()
    out = hvd.reducescatter(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=3.0)
    out.sum().backward()
    # d/dx of sum over every rank's block of 6 * sum_r x_r: 6 everywhere.
    np.testing.assert_allclose(x.grad.numpy(), np.full((rows, 3), 6.0, np.float32))


def test_grouped_allgather_matches_numpy():
    size, rank = hvd.size(), hvd.rank()
    tensors = [torch.from_numpy(rows_of(rank, rank + 1, salt=k)) for k in range(3)]
    handle = hvd.grouped_allgather_async(tensors, name="grouped_ag")
    outs = hvd.synchronize(handle)
    assert isinstance(outs, list) and len(outs) == 3
    for k, out in enumerate(outs):
        want = np.concatenate([rows_of(r, r + 1, salt=k) for r in range(size)])
        np.testing.assert_array_equal(out.numpy(), want)
    for k, out in enumerate(hvd.grouped_allgather(tensors)):
        want = np.concatenate([rows_of(r, r + 1, salt=k) for r in range(size)])
        np.testing.assert_array_equal(out.numpy(), want)


def test_grouped_allgather_gradient():
    rank = hvd.rank()
    xs = [torch.from_numpy(rows_of(rank, rank + 1, salt=k)).requires_grad_() for k in range(2)]
    outs = hvd.grouped_allgather(xs, name="grouped_ag.grad")
    (outs[0].sum() + 2 * outs[1].sum()).backward()
    # Every rank's output sums this rank's rows once: the gradient summed over ranks.
    np.testing.assert_allclose(xs[0].grad.numpy(), np.full((rank + 1, 3), hvd.size()))
    np.testing.assert_allclose(xs[1].grad.numpy(), np.full((rank + 1, 3), 2 * hvd.size()))


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=["sum", "average"])
def test_grouped_reducescatter_matches_numpy(op):
    rows = [hvd.size() * 2, hvd.size() + 1]
    tensors = [torch.from_numpy(rows_of(hvd.rank(), n, salt=k)) for k, n in enumerate(rows)]
    handle = hvd.grouped_reducescatter_async(
        tensors, name=f"grouped_rs.{op}", op=op, prescale_factor=0.5, postscale_factor=4.0
    )
    outs = hvd.synchronize(handle)
    for k, (n, out) in enumerate(zip(rows, outs, strict=True)):
        np.testing.assert_allclose(
            out.numpy(), expected_reducescatter(n, op, 0.5, 4.0, salt=k), rtol=1e-6
        )
    outs = hvd.grouped_reducescatter(tensors, op=op)
    for k, (n, out) in enumerate(zip(rows, outs, strict=True)):
        np.testing.assert_allclose(out.numpy(), expected_reducescatter(n, op, salt=k), rtol=1e-6)


def test_grouped_reducescatter_gradient():
    rows = hvd.size() * 2
    xs = [torch.from_numpy(rows_of(hvd.rank(), rows, salt=k)).requires_grad_() for k in range(2)]
    outs = hvd.grouped_reducescatter(xs, op=hvd.Average, postscale_factor=2.0)
    (outs[0].sum() + outs[1].sum()).backward()
    for x in xs:
        np.testing.assert_allclose(x.grad.numpy(), np.full((rows, 3), 2.0 / hvd.size()), rtol=1e-6)


# ---- sparse_allreduce_async -----------------------------------------------------------------


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=["sum", "average"])
def test_sparse_allreduce_async_matches_the_dense_reduction(op):
    size, rank = hvd.size(), hvd.rank()
    dense = [np.zeros((5, 2), np.float32) for _ in range(size)]
    for r in range(size):
        dense[r][r % 5] = [r + 1, 2 * r + 1]
        dense[r][(r + 2) % 5] = [10 * r + 1, 1]
    sparse = torch.from_numpy(dense[rank]).to_sparse()
    handle = hvd.sparse_allreduce_async(sparse, name=f"sparse.{op}", op=op)
    assert not isinstance(handle, torch.Tensor)
    got = hvd.synchronize(handle)
    assert got.is_sparse
    want = sum(dense) / (size if op == hvd.Average else 1)
    np.testing.assert_allclose(got.to_dense().numpy(), want, rtol=1e-6)
    again = hvd.sparse_allreduce_async(sparse, name=f"sparse.call.{op}", op=op)
    np.testing.assert_allclose(again().to_dense().numpy(), want, rtol=1e-6)


# ---- Compression and user Compressors ----------------------------------------------------


class ScaleCompressor(hvd.Compressor):
    """Sends 2 * tensor and divides by the context (3) on arrival, so a result shows that
    both ran; counts its calls."""

    calls: ClassVar[list[str]] = []

    @staticmethod
    def compress(tensor):
        ScaleCompressor.calls.append("compress")
        return tensor * 2, 3.0

    @staticmethod
    def decompress(tensor, ctx):
        ScaleCompressor.calls.append("decompress")
        return tensor / ctx


def test_builtin_compressors_have_horovods_interface():
    x = torch.tensor([1.5, -2.0], dtype=torch.float32)
    for compression, half in [
        (hvd.Compression.fp16, torch.float16),
        (hvd.Compression.bf16, torch.bfloat16),
    ]:
        assert issubclass(compression, hvd.Compressor)
        sent, ctx = compression.compress(x)
        assert sent.dtype == half
        back = compression.decompress(sent, ctx)
        assert back.dtype == torch.float32 and torch.equal(back, x)
        ints = torch.arange(3)
        assert compression.compress(ints)[0] is ints
    sent, ctx = hvd.Compression.none.compress(x)
    assert sent is x and hvd.Compression.none.decompress(sent, ctx) is x


def test_user_compressor_runs_around_allreduce():
    size, rank = hvd.size(), hvd.rank()
    x = torch.from_numpy(rows_of(rank, 4))
    want = 2.0 / 3.0 * sum(rows_of(r, 4) for r in range(size))
    ScaleCompressor.calls.clear()
    got = hvd.allreduce(x, name="user_comp", op=hvd.Sum, compression=ScaleCompressor)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    assert ScaleCompressor.calls == ["compress", "decompress"]
    got = hvd.synchronize(hvd.allreduce_async(x, op=hvd.Average, compression=ScaleCompressor))
    np.testing.assert_allclose(got.numpy(), want / size, rtol=1e-6)
    y = x.clone()
    hvd.allreduce_(y, op=hvd.Sum, compression=ScaleCompressor)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    outs = hvd.grouped_allreduce([x, 2 * x], op=hvd.Sum, compression=ScaleCompressor)
    np.testing.assert_allclose(outs[0].numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(outs[1].numpy(), 2 * want, rtol=1e-6)


class ExactScale(hvd.Compressor):
    """x2 on the way out, /2 back: exact in float, so the step equals an uncompressed one."""

    calls = 0

    @staticmethod
    def compress(tensor):
        ExactScale.calls += 1
        return tensor * 2, 2.0

    @staticmethod
    def decompress(tensor, ctx):
        return tensor / ctx


@pytest.mark.parametrize("passes", [1, 2])
def test_user_compressor_in_distributed_optimizer(passes):
    def train(compression):
        model, groups = two_group_model()
        opt = hvd.DistributedOptimizer(
            torch.optim.SGD(groups, lr=0.1),
            named_parameters=model.named_parameters(),
            compression=compression,
            backward_passes_per_step=passes,
            op=hvd.Sum,
        )
        torch.manual_seed(hvd.rank())
        for _ in range(2):
            opt.zero_grad()
            for _ in range(passes):
                F.mse_loss(model(torch.randn(5, 4)), torch.zeros(5, 2)).backward()
            opt.step()
        return [p.detach().clone() for p in model.parameters()]

    ExactScale.calls = 0
    plain, compressed = train(hvd.Compression.none), train(ExactScale)
    assert ExactScale.calls > 0
    for a, b in zip(plain, compressed, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_grouped_calls_are_enqueued_all_or_none():
    """A member whose name is in flight refuses the whole group at the call (ValueError), and
    no other member is left in flight: the group can run right after."""
    if hvd.size() == 1:
        pytest.skip("needs a second rank to keep the first call in flight")
    x = torch.ones(2 * hvd.size(), 3)
    held = None
    if hvd.rank() == 0:
        held = hvd.allgather_async(x, name="all_or_none.1")
        with pytest.raises(ValueError, match=r"all_or_none\.1"):
            hvd.grouped_allgather_async([x, x], name="all_or_none")
        with pytest.raises(ValueError, match=r"all_or_none\.1"):
            hvd.grouped_reducescatter_async([x, x], name="all_or_none")
    hvd.barrier()
    if hvd.rank() != 0:
        held = hvd.allgather_async(x, name="all_or_none.1")
    hvd.synchronize(held)
    outs = hvd.grouped_allgather([x, x], name="all_or_none")
    assert [tuple(o.shape) for o in outs] == [(2 * hvd.size() ** 2, 3)] * 2
    outs = hvd.grouped_reducescatter([x, x], name="all_or_none", op=hvd.Sum)
    for o in outs:
        np.testing.assert_array_equal(o.numpy(), np.full((2, 3), hvd.size(), np.float32))
