"""hora.torch against PyTorch's DistributedDataParallel on DDP's benchmark model, in one run.

The model is the MLP 1024-2048-2048-1024-10 (8.4M parameters), per-rank batch 64, one thread
per rank, SGD with momentum. The driver (no arguments besides the options) runs, one after
the other on the same machine:
  - one plain process (no hora, no DDP) at batch 64, 128 and 256;
  - hora.torch at 1 rank (what hora's hooks and handles cost over the plain step), 2 and 4;
  - DDP over gloo at 2 and 4 ranks (torch.distributed, launched by horarun with MASTER_* set);
and prints samples/s, scaling efficiency and the ratios. Each configuration is a worker run
of this same file (``--worker plain|hora|ddp``). ``--json FILE`` also writes the figures
(what ``scripts/perf_report.py ingest torch_scaling`` reads).

    python benchmarks/python/torch_scaling.py [--build build] [--steps 30] [--ranks 2 4]
                                              [--json FILE]
"""

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def model_and_data(batch):
    import torch

    # The MLP of examples/pytorch/synthetic_benchmark.py (--model mlp), from that file, so the
    # benchmark and the example time one model.
    sys.path.insert(0, os.path.join(ROOT, "examples", "pytorch"))
    from synthetic_benchmark import make_model

    torch.manual_seed(0)
    model, _ = make_model("mlp")
    return model, torch.randn(batch, 1024), torch.randint(0, 10, (batch,))


def worker(args):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    rank, size = 0, 1
    if args.worker == "hora":
        import hora.torch as hvd

        hvd.init()
        rank, size = hvd.rank(), hvd.size()
    elif args.worker == "ddp":
        import torch.distributed as dist

        rank, size = int(os.environ["HORA_RANK"]), int(os.environ["HORA_SIZE"])
        dist.init_process_group("gloo", rank=rank, world_size=size)
    model, x, y = model_and_data(args.batch_size)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if args.worker == "hora":
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    elif args.worker == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
    waits = []

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        if args.worker == "hora":
            t = time.perf_counter()
            opt.synchronize()
            waits.append(time.perf_counter() - t)
            with opt.skip_synchronize():
                opt.step()
        else:
            opt.step()

    for _ in range(5):
        step()
    waits.clear()
    barrier(args.worker)
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    barrier(args.worker)
    elapsed = time.perf_counter() - start
    if rank == 0:
        rate = size * args.batch_size * args.steps / elapsed
        wait_ms = 1e3 * sum(waits) / len(waits) if waits else 0.0
        print(
            f"RESULT {args.worker} ranks {size} batch {args.batch_size} samples/s {rate:.1f} "
            f"step_ms {1e3 * elapsed / args.steps:.2f} wait_ms {wait_ms:.2f}",
            flush=True,
        )
    if args.worker == "hora":
        hvd.shutdown()
    elif args.worker == "ddp":
        torch.distributed.destroy_process_group()


def barrier(kind):
    if kind == "hora":
        import hora

        hora.barrier()
    elif kind == "ddp":
        import torch.distributed as dist

        dist.barrier()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args, kind, ranks, batch):
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"), OMP_NUM_THREADS="1")
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        kind,
        "--batch-size",
        str(batch),
        "--steps",
        str(args.steps),
    ]
    if kind != "plain":
        cmd = [os.path.join(args.build, "launcher", "horarun"), "-np", str(ranks), *cmd]
    if kind == "ddp":
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    m = re.search(r"RESULT .*samples/s ([0-9.]+) step_ms ([0-9.]+) wait_ms ([0-9.]+)", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"{kind} at {ranks} ranks failed:\n{out.stdout}\n{out.stderr}")
    rate, step_ms, wait_ms = (float(v) for v in m.groups())
    print(
        f"  {kind:5} ranks {ranks} batch {batch:3}/rank: {rate:8.1f} samples/s "
        f"({step_ms:.1f} ms/step"
        + (f", waiting for allreduces {wait_ms:.1f} ms)" if kind == "hora" else ")"),
        flush=True,
    )
    return rate, step_ms, wait_ms


def driver(args):
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.*)", cpu)
    import torch

    print(
        f"CPU: {model.group(1) if model else '?'}; torch {torch.__version__}; "
        f"MLP 1024-2048-2048-1024-10, one thread per rank, {args.steps} timed steps"
    )
    plain = {b: run(args, "plain", 1, b) for b in sorted({64} | {64 * n for n in args.ranks})}
    hora1 = run(args, "hora", 1, 64)
    print(
        f"hora's own cost per step at 1 rank (hooks, handles, engine): "
        f"{hora1[1] - plain[64][1]:+.2f} ms over a plain step of {plain[64][1]:.1f} ms"
    )
    hora, ddp = {1: hora1}, {}
    for n in args.ranks:
        h = hora[n] = run(args, "hora", n, 64)
        d = ddp[n] = run(args, "ddp", n, 64)
        print(
            f"{n} ranks: hora.torch {h[0]:.0f} samples/s, DDP {d[0]:.0f}: hora/DDP "
            f"{h[0] / d[0]:.2f}x; scaling efficiency hora {100 * h[0] / (n * plain[64][0]):.0f}%"
            f", DDP {100 * d[0] / (n * plain[64][0]):.0f}%; vs one process at batch "
            f"{64 * n}: hora {h[0] / plain[64 * n][0]:.2f}x, DDP {d[0] / plain[64 * n][0]:.2f}x",
            flush=True,
        )
    if args.json:

        def figures(runs):
            return {
                str(k): {"samples_per_s": v[0], "step_ms": v[1], "wait_ms": v[2]}
                for k, v in runs.items()
            }

        with open(args.json, "w") as f:
            json.dump(
                {
                    "torch": torch.__version__.split("+")[0],
                    "steps": args.steps,
                    "plain": figures(plain),
                    "hora": figures(hora),
                    "ddp": figures(ddp),
                    "hora_overhead_ms": hora1[1] - plain[64][1],
                },
                f,
                indent=2,
            )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", choices=["plain", "hora", "ddp"])
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("--json", default=None, help="also write the figures here")
    args = p.parse_args()
    if args.worker:
        worker(args)
    else:
        args.build = os.path.abspath(args.build)
        driver(args)


if __name__ == "__main__":
    main()
