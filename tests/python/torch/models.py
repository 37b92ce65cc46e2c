"""Small seeded models and data shared by hora.torch's training tests."""

import copy

import torch

BATCH = 24  # the global batch: divisible by every rank count tested (1..4) times 2 micro-batches


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(10, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 8),
        torch.nn.Tanh(),
        torch.nn.Linear(8, 3),
    ).double()


def cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(4, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 4 * 4, 3),
    ).double()


def data(model_name, step):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(
        (BATCH, 10) if model_name == "mlp" else (BATCH, 1, 8, 8), generator=g, dtype=torch.float64
    )
    y = torch.randint(0, 3, (BATCH,), generator=g)
    return x, y


def shard(t, rank, size):
    n = t.shape[0] // size
    return t[rank * n : (rank + 1) * n]


def clone(model):
    return copy.deepcopy(model)


def max_rel_diff(a, b):
    worst = 0.0
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        worst = max(worst, float(((p - q).abs() / (q.abs() + 1e-12)).max().detach()))
    return worst
