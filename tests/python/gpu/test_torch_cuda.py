"""hora.torch on CUDA tensors (run through gpu_main.py, which skips without a GPU): allreduce,
grouped allreduce, broadcast, allgather, alltoall, reducescatter and fp16/bf16-compressed
allreduce of tensors in GPU memory, written on a side stream (the engine must wait for that
stream's work), synchronize making the current stream wait on hora's completion event, and
DistributedOptimizer on a CUDA model. Each rank uses
cuda:(local rank modulo the GPUs); with one GPU and several ranks the job stages GPU tensors
through host memory (HORA_BACKEND=builtin), with a GPU per rank it uses NCCL."""

import pytest
import torch

import hora.torch as hvd


@pytest.fixture(scope="module")
def dev():
    hvd.init()
    d = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
    torch.cuda.set_device(d)
    yield d
    hvd.shutdown()


def ramp(n, dev, rank):
    return (torch.arange(n, dtype=torch.float32, device=dev) % 7 + 1) * (rank + 1)


def expected_sum(n, dev):
    s = hvd.size() * (hvd.size() + 1) / 2
    return (torch.arange(n, dtype=torch.float32, device=dev) % 7 + 1) * s


def test_allreduce_sum_and_average(dev):
    x = ramp(1000, dev, hvd.rank())
    y = hvd.allreduce(x, op=hvd.Sum, name="cuda.sum")
    assert y.device == dev
    torch.testing.assert_close(y, expected_sum(1000, dev))
    z = hvd.allreduce(x, name="cuda.avg")
    torch.testing.assert_close(z, expected_sum(1000, dev) / hvd.size())


def test_in_place_on_a_side_stream(dev):
    side = torch.cuda.Stream(dev)
    with torch.cuda.stream(side):
        # Produced by kernels on `side`: hora must wait for them (its ready event is recorded
        # on this stream), not read the buffer early.
        x = torch.zeros(1 << 20, device=dev)
        for _ in range(20):
            x.add_(hvd.rank() + 1)
        hvd.allreduce_(x, op=hvd.Sum, name="cuda.side")
    total = 20 * hvd.size() * (hvd.size() + 1) / 2
    torch.cuda.synchronize()
    assert torch.all(x == total)


def test_grouped_allreduce_fuses_many_small_tensors(dev):
    xs = [ramp(100 + i, dev, hvd.rank()) for i in range(40)]
    ys = hvd.grouped_allreduce(xs, op=hvd.Sum, name="cuda.group")
    for i, y in enumerate(ys):
        torch.testing.assert_close(y, expected_sum(100 + i, dev))


def test_broadcast(dev):
    x = ramp(333, dev, hvd.rank())
    hvd.broadcast_(x, root_rank=0, name="cuda.bcast")
    torch.testing.assert_close(x, ramp(333, dev, 0))


def test_host_and_gpu_tensors_in_one_job(dev):
    a = hvd.allreduce(torch.ones(5), op=hvd.Sum, name="mix.cpu")
    b = hvd.allreduce(torch.ones(5, device=dev), op=hvd.Sum, name="mix.gpu")
    assert a.device.type == "cpu" and b.device == dev
    assert torch.all(a == hvd.size()) and torch.all(b.cpu() == hvd.size())


def test_allgather_alltoall_reducescatter_return_cuda_tensors(dev):
    r, n = hvd.rank(), hvd.size()
    g = hvd.allgather(torch.full((r + 1, 3), float(r), device=dev), name="cuda.gather")
    assert g.device == dev and g.shape == (n * (n + 1) // 2, 3)
    want = torch.cat([torch.full((q + 1, 3), float(q)) for q in range(n)])
    torch.testing.assert_close(g.cpu(), want)
    x = torch.arange(n * 2, dtype=torch.float32, device=dev).reshape(n, 2) + 100 * r
    y, received = hvd.alltoall(x, splits=[1] * n, name="cuda.a2a")
    assert y.device == dev and received.tolist() == [1] * n
    want = torch.stack([torch.arange(2, dtype=torch.float32) + 2 * r + 100 * q for q in range(n)])
    torch.testing.assert_close(y.cpu(), want)
    z = hvd.reducescatter(torch.ones(2 * n, 4, device=dev) * (r + 1), op=hvd.Sum, name="cuda.rs")
    assert z.device == dev and z.shape == (2, 4)
    assert torch.all(z.cpu() == n * (n + 1) / 2)


@pytest.mark.parametrize("compression", [hvd.Compression.fp16, hvd.Compression.bf16])
def test_compressed_allreduce_casts_on_the_gpu(dev, compression):
    x = ramp(4099, dev, hvd.rank())
    y = hvd.allreduce(x, op=hvd.Sum, name=f"cuda.comp.{compression}", compression=compression)
    assert y.device == dev and y.dtype == torch.float32
    torch.testing.assert_close(y, expected_sum(4099, dev))


def test_synchronize_makes_the_current_stream_wait_not_the_host(dev):
    # The result is consumed on a side stream that is current during synchronize: hora makes
    # that stream wait for its completion event, so reading it there needs no host sync.
    side = torch.cuda.Stream(dev)
    with torch.cuda.stream(side):
        x = ramp(1 << 18, dev, hvd.rank())
        h = hvd.allreduce_async(x, op=hvd.Sum, name="cuda.event")
        y = hvd.synchronize(h)
        total = y.sum()  # queued on `side` after its wait on hora's event
    side.synchronize()
    torch.testing.assert_close(total.cpu(), expected_sum(1 << 18, dev).sum().cpu())


def test_distributed_optimizer_on_cuda(dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    ).to(dev)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters()
    )
    gen = torch.Generator().manual_seed(100 + hvd.rank())
    for step in range(3):
        data = torch.randn(8, 16, generator=gen).to(dev)
        opt.zero_grad()
        model(data).square().mean().backward()
        opt.synchronize()
        for name, p in model.named_parameters():
            # Every rank holds the average: averaging it again (on the host) changes nothing.
            g = p.grad.detach().cpu()
            again = hvd.allreduce(g, name=f"check.{step}.{name}")
            torch.testing.assert_close(again, g)
        with opt.skip_synchronize():
            opt.step()
    for name, p in model.named_parameters():
        w = p.detach().cpu()
        torch.testing.assert_close(hvd.allreduce(w, name=f"final.{name}"), w)
