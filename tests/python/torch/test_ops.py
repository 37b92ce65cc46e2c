"""hora.torch's collectives on every dtype torch and hora share, in place and out of place,
tensors of rank 0..4 and empty ones; gradients of the differentiable collectives checked
numerically; errors across ranks."""

import pytest
import torch

import hora.torch as hvd

DTYPES = [
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.bool,
]
SHAPES = [(), (0,), (5,), (3, 4), (2, 3, 2), (2, 1, 3, 2)]


@pytest.fixture(scope="module", autouse=True)
def job():
    hvd.init()
    yield
    hvd.shutdown()


def make(dtype, rank, shape, salt=0):
    n = 1
    for d in shape:
        n *= d
    i = torch.arange(n, dtype=torch.int64)
    if dtype == torch.bool:
        v = (i + rank + salt) % 3 != 0
    else:
        v = (i * 3 + rank + salt) % 4 + 1
    return v.reshape(shape).to(dtype)


def as64(t):
    return t.to(torch.float64) if t.dtype != torch.bool else t


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allreduce(dtype):
    rank, size = hvd.rank(), hvd.size()
    ops = [hvd.Min, hvd.Max] if dtype == torch.bool else [hvd.Sum, hvd.Min, hvd.Max]
    for shape in SHAPES:
        for op in ops:
            name = f"t.ar.{dtype}.{shape}.{op.name}"
            x = make(dtype, rank, shape)
            out = hvd.allreduce(x, op=op, name=name)
            parts = torch.stack([as64(make(dtype, r, shape)) for r in range(size)])
            if dtype == torch.bool:
                want = parts.all(0) if op == hvd.Min else parts.any(0)
            elif op == hvd.Sum:
                want = parts.sum(0)
            else:
                want = parts.min(0).values if op == hvd.Min else parts.max(0).values
            assert out.dtype == dtype and out.shape == x.shape
            if dtype in (torch.uint8, torch.int8) and op == hvd.Sum:
                want = want.to(dtype)  # wraps like the integer type
            assert torch.equal(as64(out), as64(want.to(dtype))), (shape, op)
            y = x.clone()
            assert hvd.allreduce_(y, op=op, name=name + "_") is y
            assert torch.equal(y, out)
            h = hvd.allreduce_async(x, op=op, name=name + ".async")
            assert torch.equal(hvd.synchronize(h), out)


def test_allreduce_average_and_scales():
    size = hvd.size()
    x = torch.full((4,), 2.0 * (hvd.rank() + 1))
    assert torch.allclose(hvd.allreduce(x, name="t.avg"), torch.full((4,), float(size + 1)))
    out = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0, name="t.sc")
    assert torch.allclose(out, torch.full((4,), 1.5 * size * (size + 1)))
    assert torch.allclose(
        hvd.allreduce(x, average=False, name="t.avgflag"),
        torch.full((4,), float(size * (size + 1))),
    )


@pytest.mark.parametrize(
    "compression", [hvd.Compression.fp16, hvd.Compression.bf16], ids=["fp16", "bf16"]
)
def test_allreduce_compression(compression):
    x = torch.linspace(-1, 1, 301) + hvd.rank()
    out = hvd.allreduce(x, op=hvd.Sum, compression=compression, name=f"t.comp.{compression}")
    want = sum(torch.linspace(-1, 1, 301) + r for r in range(hvd.size()))
    assert out.dtype == torch.float32
    assert torch.allclose(out, want, rtol=1e-2, atol=2e-2)


def test_non_contiguous_input_is_copied_out_of_place():
    x = torch.arange(12.0).reshape(3, 4).t()
    assert not x.is_contiguous()
    assert torch.allclose(hvd.allreduce(x, op=hvd.Sum, name="t.nc"), x * hvd.size())
    with pytest.raises(hvd.InvalidArgumentError, match="contiguous"):
        hvd.allreduce_(x, name="t.nc_")


def test_grouped_allreduce():
    size = hvd.size()
    xs = [torch.ones(3) * (hvd.rank() + 1), torch.arange(5.0), torch.zeros(0)]
    outs = hvd.grouped_allreduce(xs, op=hvd.Sum, name="t.group")
    assert torch.allclose(outs[0], torch.full((3,), size * (size + 1) / 2))
    assert torch.allclose(outs[1], torch.arange(5.0) * size)
    ys = [x.clone() for x in xs]
    hvd.grouped_allreduce_(ys, op=hvd.Sum, name="t.group_")
    assert all(torch.equal(a, b) for a, b in zip(ys, outs, strict=True))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allgather(dtype):
    rank, size = hvd.rank(), hvd.size()
    x = make(dtype, rank, (rank + 1, 2, 3))
    out = hvd.allgather(x, name=f"t.ag.{dtype}")
    want = torch.cat([make(dtype, r, (r + 1, 2, 3)) for r in range(size)])
    assert torch.equal(out, want)
    assert hvd.allgather(make(dtype, rank, (0,)), name=f"t.ag0.{dtype}").shape == (0,)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_broadcast(dtype):
    rank, size = hvd.rank(), hvd.size()
    for root in range(size):
        x = make(dtype, rank, (2, 3))
        out = hvd.broadcast(x, root, name=f"t.bc.{dtype}.{root}")
        assert torch.equal(out, make(dtype, root, (2, 3)))
        assert torch.equal(x, make(dtype, rank, (2, 3)))
        hvd.broadcast_(x, root, name=f"t.bc_.{dtype}.{root}")
        assert torch.equal(x, make(dtype, root, (2, 3)))


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.bool, torch.bfloat16], ids=str)
def test_alltoall(dtype):
    rank, size = hvd.rank(), hvd.size()
    splits = torch.tensor([p + 1 for p in range(size)], dtype=torch.int32)
    rows = int(splits.sum())
    x = make(dtype, rank, (rows, 2))
    out, received = hvd.alltoall(x, splits=splits, name=f"t.a2a.{dtype}")
    assert received.tolist() == [rank + 1] * size
    start = sum(range(1, rank + 1))
    want = torch.cat([make(dtype, r, (rows, 2))[start : start + rank + 1] for r in range(size)])
    assert torch.equal(out, want)
    even = hvd.alltoall(make(dtype, rank, (size, 2)), name=f"t.a2a.even.{dtype}")
    assert even.shape == (size, 2)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float64], ids=str)
def test_reducescatter(dtype):
    rank, size = hvd.rank(), hvd.size()
    rows = 2 * size + 1
    x = make(dtype, rank, (rows, 2))
    out = hvd.reducescatter(x, op=hvd.Sum, name=f"t.rs.{dtype}")
    full = sum(make(dtype, r, (rows, 2)).to(torch.float64) for r in range(size))
    counts = [rows // size + (1 if r < rows % size else 0) for r in range(size)]
    start = sum(counts[:rank])
    assert torch.equal(out.to(torch.float64), full[start : start + counts[rank]])


def backward_with(out, rank):
    """Backpropagates L = sum over ranks of <w_r, out_r> with w_r = rank + 1."""
    (out * float(rank + 1)).sum().backward()


def test_gradients():
    """The collectives' gradients are those of the job's total loss, summed over ranks (as in
    Horovod): each rank weighs its output by w_r = r + 1, so the expected input gradients are
    closed-form."""
    rank, size = hvd.rank(), hvd.size()
    total_w = size * (size + 1) / 2  # sum of w_r over ranks
    x = torch.randn(size + 1, 3, dtype=torch.float64, requires_grad=True)
    backward_with(hvd.allreduce(x, op=hvd.Sum), rank)
    assert torch.allclose(x.grad, torch.full_like(x, total_w))
    x.grad = None
    backward_with(hvd.allreduce(x), rank)
    assert torch.allclose(x.grad, torch.full_like(x, total_w / size))
    x.grad = None
    backward_with(hvd.broadcast(x, size - 1), rank)
    want = total_w if rank == size - 1 else 0.0
    assert torch.allclose(x.grad, torch.full_like(x, want))
    # reducescatter: rank r's output is block r of the sum: d/dx of every rank's input is
    # block p -> w_p.
    rows = 2 * size + 1
    y = torch.randn(rows, 2, dtype=torch.float64, requires_grad=True)
    backward_with(hvd.reducescatter(y, op=hvd.Sum), rank)
    counts = [rows // size + (1 if p < rows % size else 0) for p in range(size)]
    want = torch.cat(
        [torch.full((counts[p], 2), float(p + 1), dtype=torch.float64) for p in range(size)]
    )
    assert torch.allclose(y.grad, want)
    # alltoall (even): the rows this rank sent to p come back weighted by w_p.
    z = torch.randn(2 * size, 2, dtype=torch.float64, requires_grad=True)
    backward_with(hvd.alltoall(z), rank)
    want = torch.cat([torch.full((2, 2), float(p + 1), dtype=torch.float64) for p in range(size)])
    assert torch.allclose(z.grad, want)
    # allgather: rank r's rows of every output, weighted by every rank's w.
    a = torch.ones(rank + 1, 2, dtype=torch.float64, requires_grad=True)
    g = hvd.allgather(a)
    wmat = torch.arange(g.numel(), dtype=torch.float64).reshape(g.shape)
    (g * wmat * float(rank + 1)).sum().backward()
    start = sum(r + 1 for r in range(rank))
    assert torch.allclose(a.grad, total_w * wmat[start : start + rank + 1])


def test_mismatch_raises_on_every_rank():
    rank, size = hvd.rank(), hvd.size()
    if size == 1:
        pytest.skip("needs two ranks")
    x = torch.ones(3 + (rank == 1))
    with pytest.raises(hvd.MismatchError, match=r"tensor 't.mm.shape'.*shape.*rank"):
        hvd.allreduce(x, name="t.mm.shape")
    x = torch.ones(3, dtype=torch.float32 if rank else torch.float64)
    with pytest.raises(hvd.MismatchError, match=r"tensor 't.mm.dtype'.*float"):
        hvd.allreduce(x, name="t.mm.dtype")
    assert torch.equal(
        hvd.allreduce(torch.ones(2), op=hvd.Sum, name="t.mm.after"), torch.full((2,), float(size))
    )


def test_objects_and_flags():
    rank, size = hvd.rank(), hvd.size()
    obj = hvd.broadcast_object({"rank": rank, "t": torch.arange(3)}, root_rank=size - 1)
    assert obj["rank"] == size - 1 and torch.equal(obj["t"], torch.arange(3))
    assert hvd.allgather_object(("r", rank)) == [("r", r) for r in range(size)]
    assert hvd.gloo_built() in (True, False) and hvd.nccl_built() not in (None,)
    assert hvd.local_rank() < hvd.local_size()
    assert hvd.join() in range(size)
    hvd.barrier()


def test_registered_exporter_and_its_fallback():
    # hora.torch registers torch's C exporter for torch.Tensor; an exporter that raises leaves
    # the tensor to its __dlpack__.
    from hora import _core

    assert _core.describe(torch.ones(2, 3), "t") == ("float32", (2, 3), "cpu")

    class Wrapped:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kwargs):
            return self.t.__dlpack__(**kwargs)

    exported = []

    def exporter(w):
        exported.append(w)
        if w.t.numel() == 0:
            raise RuntimeError("refused")
        return torch._C._to_dlpack(w.t)

    _core.register_exporter(Wrapped, exporter)
    assert _core.describe(Wrapped(torch.ones(4, dtype=torch.float64))) == ("float64", (4,), "cpu")
    assert _core.describe(Wrapped(torch.ones(0, 2))) == ("float32", (0, 2), "cpu")
    assert len(exported) == 2
