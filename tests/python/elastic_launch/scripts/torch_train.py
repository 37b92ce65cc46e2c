"""An elastic hora.torch job for tests/python/elastic_launch: a small MLP trained by step on a
fixed schedule (step s's global batch depends on s only, split over the ranks), so the result
equals one process replaying the schedule whatever the membership did. Faults on request:
a worker SIGKILLs itself or raises at a step (generation 0 only); rank 0 asks for a host at a
step and the ranks commit (which checks for added hosts) until the job has grown.

Creates OUT/started-<id>-<pid> at start and writes OUT/worker<id>.json at the end: pid, rank,
size, generation, the final parameters and the (step, size, generation) of every step this
process completed.
"""

import argparse
import os
import signal
import time

import job_files
import torch

GLOBAL_BATCH = 12  # divisible by every size the tests run at (1..4)
FEATURES = 6


def make_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)
    )


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def global_batch(step):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(GLOBAL_BATCH, FEATURES, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def train_step(model, optimizer, step, rank, size):
    x, y = global_batch(step)
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x[rank::size]), y[rank::size]).backward()
    optimizer.step()


def reference(epochs, batches):
    """The parameters after every step of the schedule in one process."""
    model = make_model()
    optimizer = make_optimizer(model)
    for step in range(epochs * batches):
        train_step(model, optimizer, step, 0, 1)
    return [p.detach().clone() for p in model.parameters()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--commit-every", type=int, default=3)
    parser.add_argument("--fault", choices=["none", "kill", "raise"], default="none")
    parser.add_argument("--fault-worker", type=int, default=1)
    parser.add_argument("--fault-step", type=int, default=10)
    parser.add_argument("--grow-step", type=int, default=-1)
    parser.add_argument("--grow-file", default="")
    parser.add_argument("--grow-size", type=int, default=3)
    parser.add_argument("--tag", default="")  # marks the processes of one test run
    args = parser.parse_args()

    import hora.torch as hvd
    from hora import _core

    worker = job_files.worker_id()
    job_files.mark_started(args.out)
    hvd.init()
    model = make_model()
    optimizer = hvd.DistributedOptimizer(
        make_optimizer(model), named_parameters=model.named_parameters()
    )
    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)
    log = []

    def grow(step):
        if hvd.rank() == 0:
            with open(args.grow_file, "w") as f:
                f.write("grow\n")
        deadline = time.monotonic() + 60
        while hvd.size() < args.grow_size and time.monotonic() < deadline:
            time.sleep(0.2)
            state.commit()  # raises HostsUpdatedInterrupt on every rank together
        raise SystemExit(f"the job did not grow to {args.grow_size} ranks within 60 s")

    @hvd.elastic.run
    def train(state):
        while state.epoch < args.epochs:
            while state.batch < args.batches:
                step = state.epoch * args.batches + state.batch
                if _core.elastic_generation() == 0 and worker == args.fault_worker:
                    if args.fault == "kill" and step == args.fault_step:
                        os.kill(os.getpid(), signal.SIGKILL)
                    if args.fault == "raise" and step == args.fault_step:
                        raise RuntimeError(f"worker {worker} fails at step {step}")
                if step == args.grow_step and hvd.size() < args.grow_size:
                    grow(step)
                train_step(model, optimizer, step, hvd.rank(), hvd.size())
                log.append((step, hvd.size(), _core.elastic_generation()))
                state.batch += 1
                if state.batch % args.commit_every == 0:
                    state.commit()
            state.epoch, state.batch = state.epoch + 1, 0
            state.commit()

    train(state)
    job_files.write_result(
        args.out, {"params": [p.detach().tolist() for p in model.parameters()], "log": log}
    )
    hvd.shutdown()


if __name__ == "__main__":
    main()
