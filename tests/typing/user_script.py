"""A typed training-style script, as a user would write it against
minatoloader: `make typecheck` runs mypy on it (tests/typing/mypy.ini)
against the installed package. It is checked, not run."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sized

import torch
import torch.utils.data
from torch import Tensor
from torch.utils.data import Dataset, DistributedSampler

import minatoloader
import minatoloader.datasets
from minatoloader import DataLoader


class Pairs(Dataset[tuple[Tensor, int]]):
    """Item i: a feature vector and its label."""

    def __init__(self, n: int, dim: int = 8) -> None:
        self.x = torch.randn(n, dim)
        self.y = [i % 3 for i in range(n)]

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        return self.x[index], self.y[index]


def make_loader(dataset: Dataset[tuple[Tensor, int]], batch_size: int = 16) -> DataLoader[tuple[Tensor, int]]:
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=2, drop_last=True)


def describe(loader: DataLoader[tuple[Tensor, int]]) -> str:
    ds: Dataset[tuple[Tensor, int]] = loader.dataset
    sampler: Iterable[int] = loader.sampler
    batch_size: int | None = loader.batch_size
    n = len(ds) if isinstance(ds, Sized) else -1
    return f"{type(ds).__name__}({n}) sampler={type(sampler).__name__} batch_size={batch_size} batches={len(loader)}"


def train_epoch(model: torch.nn.Module, loader: DataLoader[tuple[Tensor, int]], opt: torch.optim.Optimizer) -> float:
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        total += float(loss.item())
    return total


def as_torch(loader: DataLoader[tuple[Tensor, int]]) -> torch.utils.data.DataLoader[tuple[Tensor, int]]:
    # minatoloader.DataLoader is a torch DataLoader: it goes wherever one does.
    assert isinstance(loader, torch.utils.data.DataLoader)
    return loader


def resume(loader: DataLoader[tuple[Tensor, int]]) -> None:
    state = loader.state_dict()
    fresh = make_loader(loader.dataset)
    fresh.load_state_dict(state)


def distributed(dataset: Pairs, rank: int, world: int) -> DataLoader[tuple[Tensor, int]]:
    sampler: DistributedSampler[int] = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for _ in loader:
            pass
    return loader


def images(root: str) -> int:
    folder = minatoloader.datasets.ImageFolder(root)
    loader = DataLoader(folder, batch_size=32, shuffle=True, num_workers=4)
    count = 0
    for batch in loader:
        count += 1
    return count


def main() -> None:
    loader = make_loader(Pairs(256))
    print(describe(loader))
    model = torch.nn.Linear(8, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print(train_epoch(model, loader, opt))
    print(isinstance(loader, torch.utils.data.DataLoader), type(as_torch(loader)).__name__)
    resume(loader)
    distributed(Pairs(64), 0, 2)
    if len(sys.argv) > 1:
        print(images(sys.argv[1]))
    print(minatoloader.__version__)


if __name__ == "__main__":
    main()
