"""Synthetic throughput of data-parallel training with hora.torch, in the style of Horovod's
pytorch_synthetic_benchmark.py: random data, a fixed model, img/sec per rank and in total.

    horarun -np 2 python examples/pytorch/synthetic_benchmark.py --model mlp --batch-size 64
    horarun -np 4 python examples/pytorch/synthetic_benchmark.py --model resnet50  # on GPUs

On a machine with CUDA each rank trains on its local GPU (--no-cuda: on the CPU); torchvision's
models (resnet50, ...) are there when torchvision is installed. --no-hora runs the same loop
with the plain optimizer and no hora at all: the one-process baseline.
"""

import argparse
import statistics
import timeit

import torch
import torch.nn.functional as F

import hora.torch as hvd


def make_model(name):
    if name == "mlp":  # PyTorch DDP's benchmark MLP: 1024-2048-2048-1024-10, 8.4M parameters
        return torch.nn.Sequential(
            torch.nn.Linear(1024, 2048),
            torch.nn.ReLU(),
            torch.nn.Linear(2048, 2048),
            torch.nn.ReLU(),
            torch.nn.Linear(2048, 1024),
            torch.nn.ReLU(),
            torch.nn.Linear(1024, 10),
        ), (1024,)
    if name == "convnet":
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Flatten(),
            torch.nn.Linear(64 * 8 * 8, 256),
            torch.nn.ReLU(),
            torch.nn.Linear(256, 10),
        ), (3, 32, 32)
    try:
        import torchvision.models

        return getattr(torchvision.models, name)(), (3, 224, 224)
    except (ImportError, AttributeError):
        pass
    raise SystemExit(f"--model {name!r}: expected mlp, convnet or one of torchvision's models")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--batch-size", type=int, default=64, help="per rank")
    parser.add_argument("--num-warmup-batches", type=int, default=5)
    parser.add_argument("--num-batches-per-iter", type=int, default=10)
    parser.add_argument("--num-iters", type=int, default=5)
    parser.add_argument("--fp16-allreduce", action="store_true")
    parser.add_argument("--no-cuda", action="store_true", help="train on the CPU")
    parser.add_argument(
        "--no-hora", action="store_true", help="one process, the plain optimizer (the baseline)"
    )
    args = parser.parse_args()
    cuda = not args.no_cuda and torch.cuda.is_available()

    size, rank = 1, 0
    if not args.no_hora:
        hvd.init()
        size, rank = hvd.size(), hvd.rank()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if cuda:  # each rank its local GPU (several ranks may share one)
        local_rank = 0 if args.no_hora else hvd.local_rank()
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    device = torch.device("cuda") if cuda else torch.device("cpu")
    model, shape = make_model(args.model)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if not args.no_hora:
        compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
        optimizer = hvd.DistributedOptimizer(
            optimizer, named_parameters=model.named_parameters(), compression=compression
        )
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    data = torch.randn(args.batch_size, *shape, device=device)
    target = torch.randint(0, 10, (args.batch_size,), device=device)

    def benchmark_step():
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()

    def benchmark_steps(n):
        t = timeit.timeit(benchmark_step, number=n)
        if cuda:  # the GPU's queued work belongs to the steps timed
            start = timeit.default_timer()
            torch.cuda.synchronize()
            t += timeit.default_timer() - start
        return t

    def log(text):
        if rank == 0:
            print(text, flush=True)

    where = f"cuda ({torch.cuda.get_device_name()})" if cuda else "cpu"
    log(
        f"Model: {args.model}, batch size: {args.batch_size} per rank, ranks: {size}, "
        f"device: {where}{', no hora' if args.no_hora else ''}"
    )
    benchmark_steps(args.num_warmup_batches)
    img_secs = []
    for i in range(args.num_iters):
        t = benchmark_steps(args.num_batches_per_iter)
        rate = args.batch_size * args.num_batches_per_iter / t
        log(f"Iter #{i}: {rate:.1f} img/sec per rank")
        img_secs.append(rate)
    mean = statistics.mean(img_secs)
    conf = 1.96 * statistics.pstdev(img_secs)
    log(f"Img/sec per rank: {mean:.1f} +-{conf:.1f}")
    log(f"Total img/sec on {size} rank(s): {size * mean:.1f} +-{size * conf:.1f}")
    tuned = {} if args.no_hora else hvd.autotune_state()
    if tuned.get("enabled"):
        last = tuned["history"][-1][0] if tuned["history"] else 0
        log(
            f"Autotune: {'converged' if tuned['converged'] else 'still searching'} "
            f"({tuned['samples']} samples, last change at step {last}): fusion threshold "
            f"{tuned['fusion_threshold_bytes']} B, cycle time {tuned['cycle_time_ms']} ms, "
            f"response cache {'on' if tuned['cache_enabled'] else 'off'}"
        )
    if not args.no_hora:
        hvd.shutdown()


if __name__ == "__main__":
    main()
