"""Data-parallel training of a small convolutional network with hora.torch.

A single-process PyTorch script made distributed by the lines marked "hora": run it with

    horarun -np 2 python examples/pytorch/train.py

The data set is synthetic and seeded (10 classes of 12x12 images drawn around class
templates), so nothing is downloaded; every rank trains on its own shard of it.
"""

import argparse
import time

import torch
import torch.nn.functional as F

import hora.torch as hvd  # hora (1/4): Horovod's API; `import horovod.torch as hvd` works the same


def synthetic_images(count, seed):
    """`count` 1x12x12 images of 10 classes: a class's fixed random template plus noise."""
    templates = torch.randn(10, 1, 12, 12, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (count,), generator=g)
    images = templates[labels] + 1.5 * torch.randn(count, 1, 12, 12, generator=g)
    return images, labels


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = torch.nn.Linear(32 * 3 * 3, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64, help="per rank")
    parser.add_argument("--lr", type=float, default=0.01, help="scaled by the number of ranks")
    parser.add_argument("--samples", type=int, default=16384)
    parser.add_argument(
        "--op",
        choices=["average", "adasum"],
        default="average",
        help="how the ranks' updates combine: average the gradients (learning rate scaled by "
        "the number of ranks), or Adasum of each rank's step (the single-rank learning rate)",
    )
    args = parser.parse_args()

    hvd.init()  # hora (2/4)
    torch.manual_seed(1234)
    torch.set_num_threads(1)

    images, labels = synthetic_images(args.samples, seed=1)
    test_images, test_labels = synthetic_images(2048, seed=2)
    # Each rank trains on its own shard.
    images, labels = images[hvd.rank() :: hvd.size()], labels[hvd.rank() :: hvd.size()]

    model = Net()
    adasum = args.op == "adasum"
    lr = args.lr if adasum else args.lr * hvd.size()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    # hora (3/4): average gradients across ranks (or Adasum the steps), overlapping backward.
    optimizer = hvd.DistributedOptimizer(
        optimizer,
        named_parameters=model.named_parameters(),
        op=hvd.Adasum if adasum else hvd.Average,
    )
    # hora (4/4): start every rank from rank 0's weights and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    steps = len(images) // args.batch_size
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = torch.randperm(len(images), generator=torch.Generator().manual_seed(epoch))
        total = 0.0
        for step in range(steps):
            batch = order[step * args.batch_size : (step + 1) * args.batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images[batch]), labels[batch])
            loss.backward()
            optimizer.step()
            total += loss.item()
        model.eval()
        with torch.no_grad():
            correct = (model(test_images).argmax(1) == test_labels).float().mean()
        # Average the metrics over ranks (each rank saw its own shard).
        mean_loss = hvd.allreduce(torch.tensor(total / steps), name="metric.loss")
        accuracy = hvd.allreduce(correct, name="metric.accuracy")
        if hvd.rank() == 0:
            print(
                f"epoch {epoch}: loss {mean_loss.item():.4f}, held-out accuracy "
                f"{100 * accuracy.item():.2f}%",
                flush=True,
            )
    elapsed = time.perf_counter() - start
    if hvd.rank() == 0:
        samples = steps * args.batch_size * hvd.size() * args.epochs
        print(
            f"trained on {hvd.size()} ranks in {elapsed:.1f} s "
            f"({samples / elapsed:.0f} samples/s in total)",
            flush=True,
        )
    hvd.shutdown()


if __name__ == "__main__":
    main()
