"""The app's task: model, data and training -- what any Flower app has, nothing of fltrust.

The data is a seeded synthetic stand-in for a network-intrusion table (2 classes, 40 numeric
features) so that the app runs offline: every process generates the same samples from the same
run config, and each SuperNode takes its own partition of them.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

FEATURES = 40


class Net(nn.Module):
    """A small MLP classifier (40 features -> 2 classes)."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def _samples(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` labelled rows: attacks (label 1) shift a third of the features."""
    g = torch.Generator().manual_seed(seed)
    y = (torch.rand(n, generator=g) < 0.45).long()
    x = torch.randn(n, FEATURES, generator=g)
    x[:, : FEATURES // 3] += 1.2 * y.view(-1, 1)
    return x, y


def _partition(y: torch.Tensor, num_partitions: int, scheme: str, seed: int) -> list[torch.Tensor]:
    """Row indices of each partition: ``iid`` or ``dirichlet`` (label skew, alpha 0.5)."""
    g = torch.Generator().manual_seed(seed + 1)
    if scheme == "iid":
        return list(torch.randperm(len(y), generator=g).chunk(num_partitions))
    if scheme != "dirichlet":
        raise ValueError(f"partition={scheme!r}; choose 'iid' or 'dirichlet'")
    torch.manual_seed(seed + 2)
    parts: list[list[torch.Tensor]] = [[] for _ in range(num_partitions)]
    for label in (0, 1):
        rows = torch.nonzero(y == label).flatten()
        rows = rows[torch.randperm(len(rows), generator=g)]
        shares = torch.distributions.Dirichlet(torch.full((num_partitions,), 0.5)).sample()
        cuts = (shares.cumsum(0) * len(rows)).long().tolist()[:-1]
        for part, chunk in zip(parts, torch.tensor_split(rows, cuts)):
            part.append(chunk)
    return [torch.cat(p) for p in parts]


def load_data(partition_id: int, num_partitions: int, run_config: dict) -> tuple[DataLoader, DataLoader]:
    """One client's (train, validation) DataLoaders: 80 / 20 of its partition."""
    seed, batch_size = int(run_config["seed"]), int(run_config["batch-size"])
    x, y = _samples(int(run_config["synthetic-samples"]), seed)
    rows = _partition(y, num_partitions, str(run_config["partition"]), seed)[partition_id]
    cut = max(1, int(0.8 * len(rows)))
    train, val = rows[:cut], rows[cut:] if len(rows) > cut else rows[:1]
    g = torch.Generator().manual_seed(seed * 1_000 + partition_id)
    return (DataLoader(TensorDataset(x[train], y[train]), batch_size=batch_size, shuffle=True, generator=g),
            DataLoader(TensorDataset(x[val], y[val]), batch_size=256))


def load_server_data(run_config: dict) -> tuple[DataLoader, DataLoader]:
    """The server's own (auxiliary, test) DataLoaders, drawn apart from the clients' rows."""
    x, y = _samples(2 * int(run_config["server-samples"]), int(run_config["seed"]) + 10_007)
    half = len(y) // 2
    return (DataLoader(TensorDataset(x[:half], y[:half]), batch_size=256),
            DataLoader(TensorDataset(x[half:], y[half:]), batch_size=256))


def train(model: nn.Module, loader: DataLoader, epochs: int, lr: float) -> float:
    """Plain mini-batch Adam; returns the mean loss of the last epoch."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    total = 0.0
    for _ in range(epochs):
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            total += float(loss) * len(y)
    return total / len(loader.dataset)
