"""Elastic data-parallel training with hora.torch: the job survives a worker's failure and
takes in new workers without restarting, in the shape of Horovod's elastic examples. Run it
under horarun's elastic driver:

    horarun -np 3 --min-np 2 --max-np 4 python examples/pytorch/elastic_train.py

(``--host-discovery-script CMD`` instead of a fixed host list lets the job grow.) Kill one of
the workers (``kill -9 <pid>``) while it trains: the others roll back to the last commit, go
on as a smaller job and finish every epoch. Without the elastic flags it runs as a fixed job.

The data set is synthetic and seeded (points of 10 classes around class centres), so nothing
is downloaded; ElasticSampler gives each rank its share of what is left of the epoch.
"""

import argparse

import torch
import torch.nn.functional as F

import hora.torch as hvd  # `import horovod.torch as hvd` works the same


def synthetic_data(count, features=32, classes=10):
    g = torch.Generator().manual_seed(0)
    centres = 2.0 * torch.randn(classes, features, generator=g)
    labels = torch.randint(0, classes, (count,), generator=g)
    return torch.utils.data.TensorDataset(
        centres[labels] + torch.randn(count, features, generator=g), labels
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches-per-commit", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--samples", type=int, default=8192)
    args = parser.parse_args()

    hvd.init()
    torch.manual_seed(42)
    dataset = synthetic_data(args.samples)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    # The learning rate follows the job's size (a reset callback below keeps it so).
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9),
        named_parameters=model.named_parameters(),
    )
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=1)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    # Everything a step depends on is in the state: model, optimizer, the sampler's progress
    # through the epoch and the epoch number. run() syncs it from rank 0 before training.
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0)

    def on_reset():
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state):
        # After a reset the sampler holds the committed progress: iterating it yields only
        # what no rank has trained on yet this epoch, shared over the new size.
        while state.epoch < args.epochs:
            total, batches = 0.0, 0
            for batch_idx, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                sampler.record_batch(batch_idx, args.batch_size)
                total, batches = total + loss.item(), batches + 1
                if batch_idx % args.batches_per_commit == 0:
                    state.commit()
            average = hvd.allreduce(torch.tensor(total / max(batches, 1)), name="epoch.loss")
            if hvd.rank() == 0:
                print(f"epoch {state.epoch}: loss {average.item():.4f} on {hvd.size()} ranks")
            state.epoch += 1
            sampler.set_epoch(state.epoch)
            state.commit()

    train(state)
    hvd.shutdown()


if __name__ == "__main__":
    main()
